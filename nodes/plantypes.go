package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// A plan field of the wrong type ("mode": 640, "credential": 5,
// "on_change": "restart") is refused by encoding/json in words that name
// the field by its Go struct's path and not the entry it stands in:
// "cannot unmarshal number into Go struct field ProvisionSpec.provisioning.provisions.credential
// of type string" leaves the author of a plan of 200 provisions to find
// which one, and speaks of Go's types (nodes.FileSpec,
// map[string]json.RawMessage). wrongType walks the value beside the
// assignment's type and says where the first value of the wrong type
// stands and what it should be: "provisioning.provisions[3].credential is
// a number, not text".

// wrongTypeError is a value of the wrong type, named where it stands; it
// unwraps to encoding/json's error.
type wrongTypeError struct {
	where string
	cause error
}

func (e *wrongTypeError) Error() string { return e.where }
func (e *wrongTypeError) Unwrap() error { return e.cause }

// namedWrongType is err, json.Unmarshal's error for data, as a
// wrongTypeError when err is encoding/json's own word of a value of the
// wrong type; err itself otherwise (data not JSON, or a value an offer's
// or a placement's own decoding refused in its own words, which name the
// entry already).
func namedWrongType(data []byte, err error) error {
	if _, ok := err.(*json.UnmarshalTypeError); !ok {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	where, werr := walkType(dec, reflect.TypeFor[Assignment](), "")
	if werr != nil || where == "" {
		return err
	}
	return &wrongTypeError{where: where, cause: err}
}

// offerWrongType is err, json.Unmarshal's error for b, an offer object,
// as a wrongTypeError naming the field of the wrong type ("provision is a
// number, not text") rather than Go's struct (".plain.provision").
func offerWrongType(b []byte, err error) error {
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok || !json.Valid(b) {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	where, werr := walkType(dec, offerType, "")
	if werr != nil || where == "" {
		return err
	}
	return &wrongTypeError{where: where, cause: err}
}

var (
	offerType     = reflect.TypeFor[Offer]()
	placementType = reflect.TypeFor[Placement]()
)

// offerFields are the fields of an offer object (Offer.UnmarshalJSON);
// its have is read loosely.
var offerFields = map[string]reflect.Type{
	"provision":   reflect.TypeFor[string](),
	"answered_by": reflect.TypeFor[string](),
	"answered-by": reflect.TypeFor[string](),
}

// looseText is a placement value's or a have value's type: text, a
// number or true/false, taken as its text (loose.go).
var looseText = reflect.TypeFor[struct{ loose bool }]()

// walkType reads the next value of dec as one of type t standing at at
// (a path such as "provisioning.files[2]"), and says where a value of the
// wrong type stands ("" when none does). A null is every type's zero,
// as encoding/json takes it.
func walkType(dec *json.Decoder, t reflect.Type, at string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	if tok == nil {
		return "", nil
	}
	got := jsonKindOf(tok)
	wrong := func(want string) (string, error) {
		return fmt.Sprintf("%s is %s, not %s", at, got, want), nil
	}
	switch t {
	case looseText:
		if tok == json.Delim('{') || tok == json.Delim('[') {
			return wrong("text, a number, true or false")
		}
		return "", nil
	case offerType:
		switch {
		case got == "text":
			return "", nil
		case tok != json.Delim('{'):
			return wrong(`a provision's name (text) or an offer object {"provision", "answered_by", "have"}`)
		}
		return walkObject(dec, at, func(name string) reflect.Type {
			if strings.EqualFold(name, "have") {
				return reflect.MapOf(reflect.TypeFor[string](), looseText)
			}
			for f, ft := range offerFields {
				if strings.EqualFold(f, name) {
					return ft
				}
			}
			return nil
		})
	case placementType:
		if tok != json.Delim('{') {
			return wrong("an object of placement kinds")
		}
		names := reflect.MapOf(reflect.TypeFor[string](), looseText)
		return walkObject(dec, at, func(string) reflect.Type { return names })
	}
	switch t.Kind() {
	case reflect.String:
		if got != "text" {
			return wrong("text")
		}
	case reflect.Slice:
		if tok != json.Delim('[') {
			return wrong("a list")
		}
		for i := 0; dec.More(); i++ {
			if where, err := walkType(dec, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); where != "" || err != nil {
				return where, err
			}
		}
		_, err := dec.Token() // ']'
		return "", err
	case reflect.Map:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		return walkObject(dec, at, func(string) reflect.Type { return t.Elem() })
	case reflect.Struct:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		return walkObject(dec, at, func(name string) reflect.Type { return jsonFieldType(t, name) })
	}
	return "", nil
}

// walkObject reads the rest of an object whose '{' dec just gave, each
// value as the type typeOf names for its name (nil: skipped, a name no
// field has).
func walkObject(dec *json.Decoder, at string, typeOf func(name string) reflect.Type) (string, error) {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		name, _ := tok.(string)
		ft := typeOf(name)
		if ft == nil {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
			continue
		}
		if where, err := walkType(dec, ft, joinPath(at, name)); where != "" || err != nil {
			return where, err
		}
	}
	_, err := dec.Token() // '}'
	return "", err
}

// jsonFieldType is the type of t's field that encoding/json decodes name
// into (its exact JSON name, else one equal but for case), nil for none.
func jsonFieldType(t reflect.Type, name string) reflect.Type {
	var folded reflect.Type
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type
		}
		if folded == nil && strings.EqualFold(tag, name) {
			folded = f.Type
		}
	}
	return folded
}

// joinPath is at followed by the object name: ".name" when the name is a
// plain word, else ["name"] quoted (a placement name "a.b" or "x[0]").
func joinPath(at, name string) string {
	plain := name != ""
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return fmt.Sprintf("%s[%q]", at, name)
	case at == "":
		return name
	}
	return at + "." + name
}

// jsonKindOf says what a JSON token is, in a reason's words.
func jsonKindOf(tok json.Token) string {
	switch tok.(type) {
	case string:
		return "text"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	switch tok {
	case json.Delim('{'):
		return "an object"
	case json.Delim('['):
		return "a list"
	}
	return "null"
}

// syntaxError is encoding/json's syntax error with where it stands in
// the value, by line and column: a plan of a few hundred lines with one
// comma missing is told where to look.
type syntaxError struct {
	line, col int
	cause     *json.SyntaxError
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%v (line %d, column %d)", e.cause, e.line, e.col)
}
func (e *syntaxError) Unwrap() error { return e.cause }

// syntaxAt is err, json.Unmarshal's error for data, with the line and
// column of a syntax error; err itself when it is none.
func syntaxAt(data []byte, err error) error {
	se, ok := err.(*json.SyntaxError)
	if !ok || se.Offset < 1 || se.Offset > int64(len(data)) {
		return err
	}
	// Offset is the count of bytes read when the error was found: the
	// offending byte is the last of them.
	before := data[:se.Offset-1]
	if se.Offset == int64(len(data)) && strings.HasPrefix(se.Error(), "unexpected end") {
		before = data // the value ends too soon: where it ends
	}
	line := 1 + bytes.Count(before, []byte("\n"))
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return &syntaxError{line: line, col: col, cause: se}
}
