package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// requestFields are the verb's request fields as SPEC §6.2 writes them
// (and page, for the pages after the first): the json names of Request.
var requestFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Request]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

// checkFieldNames refuses a request object naming a field other than
// requestFields exactly: encoding/json matches names case-folded, so
// {"Node": "g14"} would narrow to g14 and {"WHAT": "sweep"} sweep, where
// every other field the SPEC does not name is refused. body is a JSON
// object that decoded into a Request.
func checkFieldNames(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '{'
		return nil // the decode already said what is wrong
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := t.(string)
		if !requestFields[name] {
			return fmt.Errorf("request is not a query: unknown field %s (the fields are what, node, module, contributor, collection, stood_after and page, in lower case)", quoted(name))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}
