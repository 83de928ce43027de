package nodes

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A plan field of the wrong type fails the module with a reason that
// names where it stands (the entry's index, the field) and what it should
// be, in the plan's words, not Go's: the author of a plan of many entries
// reads which one to mend.
func TestAValueOfTheWrongTypeIsNamedWhereItStands(t *testing.T) {
	tpl := `"templates":{"ref":"obj://mesh-artifacts/x.tgz","digest":"` + digest + `"}`
	for _, c := range []struct{ value, want string }{
		{`{"provisioning":{"provisions":[{"provision":"a","provider":"g","credential":"t"},{"provision":"p","provider":"g","credential":5}]}}`,
			"provisioning.provisions[1].credential is a number, not text"},
		{`{"provisioning":{` + tpl + `,"files":[{"path":"/a","template":"a"},{"path":"/b","template":"b","mode":640}]}}`,
			"provisioning.files[1].mode is a number, not text"},
		{`{"provisioning":{` + tpl + `,"files":[{"path":"/a","template":"a","on_change":"restart"}]}}`,
			"provisioning.files[0].on_change is text, not an object"},
		{`{"provisioning":{"secrets":[{"name":"a"},{"name":["b"]}]}}`,
			"provisioning.secrets[1].name is a list, not text"},
		{`{"provisioning":{"files":{}}}`, "provisioning.files is an object, not a list"},
		{`{"provisioning":{"placement":{"dir":["a"]}}}`, "provisioning.placement.dir is a list, not an object"},
		{`{"provisioning":{"placement":{"port":{"http":{"x":1}}}}}`,
			`placement.port.http is an object: a placement value is text, a number, true or false`},
		{`{"provisioning":{"templates":{"ref":false}}}`, "provisioning.templates.ref is a boolean, not text"},
		{`{"node":5,"provisioning":{}}`, "node is a number, not text"},
	} {
		_, err := ParseAssignment("ace.m", []byte(c.value))
		var pe *PlanError
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a PlanError", c.value, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s:\n got %s\nwant it to say %q", c.value, msg, c.want)
		}
		if strings.Contains(msg, "Go struct") || strings.Contains(msg, "json.RawMessage") {
			t.Errorf("%s: the reason speaks of Go's types: %s", c.value, msg)
		}
		if !pe.Unparsed || !strings.Contains(msg, "assignment JSON does not parse") {
			t.Errorf("%s: %s: not taken as a value that does not parse", c.value, msg)
		}
	}

	// encoding/json's own error is still underneath, and JSON that is not
	// JSON is said as before.
	_, err := ParseAssignment("ace.m", []byte(`{"provisioning":{"files":[{"path":1}]}}`))
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok {
		t.Errorf("%v: no *json.UnmarshalTypeError underneath", err)
	}
	_, err = ParseAssignment("ace.m", []byte(`{"provisioning":{"files":[{"path":"/a" "template":"a"}]}}`))
	if err == nil || !strings.Contains(err.Error(), "invalid character") {
		t.Errorf("JSON that is not JSON: %v", err)
	}
}

// A value that is not JSON fails its module with encoding/json's words and
// where they stand, by line and column: a plan of a few hundred lines with
// a comma missing is told where to look.
func TestAPlanThatIsNotJSONIsToldAtWhichLineAndColumn(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"{\"provisioning\":{\n  \"files\":[\n    {\"path\":\"/a\" \"template\":\"a\"}]}}",
			`invalid character '"' after object key:value pair (line 3, column 18)`},
		{"{\n\"provisioning\":\n{\"files\":\n[\n{\"path\": \"/a\",\n\"template\": 'a'}]}}",
			`invalid character '\'' looking for beginning of value (line 6, column 13)`},
		{`{"provisioning":{"files":[]}`, `unexpected end of JSON input (line 1, column 29)`},
	} {
		_, err := ParseAssignment("ace.m", []byte(c.value))
		var pe *PlanError
		if !errors.As(err, &pe) || !pe.Unparsed {
			t.Errorf("%q: %v, want a PlanError of a value that does not parse", c.value, err)
			continue
		}
		if !strings.Contains(err.Error(), "assignment JSON does not parse: "+c.want) {
			t.Errorf("%q:\n got %v\nwant it to say %q", c.value, err, c.want)
		}
		if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
			t.Errorf("%q: no *json.SyntaxError underneath", c.value)
		}
	}
}
