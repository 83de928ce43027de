package nodes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// JSON names are case-sensitive, and SPEC §3 gives the plan's exactly;
// encoding/json matches them without case, so {"Provisioning": …} and
// "Path" were taken as the plan's while any other reader (jq, the
// controller) sees no plan, or another path than the client writes. A
// name that is a plan field's but for case (or Unicode folding), or a
// plan field given twice, fails the module naming the field, where it
// stands and the name meant; a name the plan does not know is still let
// by (the controller may add fields; other domains' fields sit beside
// "provisioning").
func TestAMiscasedOrRepeatedFieldNameFailsTheModuleNamingIt(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"top level", `{"Provisioning":{}}`, `field "Provisioning" is not "provisioning"`},
		{"in a file", strings.Replace(specExample, `"path": "/etc/claude-code/config.toml"`, `"Path": "/etc/claude-code/config.toml"`, 1),
			`provisioning.files[0]: field "Path" is not "path"`},
		{"in on_change", strings.Replace(specExample, `"action": "restart"`, `"ACTION": "restart"`, 1),
			`provisioning.files[0].on_change: field "ACTION" is not "action"`},
		{"in an offer", strings.Replace(specExample, `"provides": []`, `"provides": ["x", {"Provision": "y"}]`, 1),
			`provisioning.provides[1]: field "Provision" is not "provision"`},
		{"folded", strings.Replace(specExample, `"secrets"`, `"\u017Fecrets"`, 1), `provisioning: field "ſecrets" is not "secrets"`},
		{"escaped exact is exact, twice", strings.Replace(specExample, `"items"`, `"items": [], "\u0069tems"`, 1), `provisioning: field "items" is given twice`},
		{"twice with case", strings.Replace(specExample, `"items"`, `"items": [], "Items"`, 1), `provisioning: field "Items" is not "items"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseAssignment("ace.claude-code", []byte(c.data))
			var pe *PlanError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "case-sensitive") && !strings.Contains(c.want, "twice") {
				t.Fatalf("got %v; want a PlanError saying %s", err, c.want)
			}
		})
	}
	for _, c := range []struct{ name, data string }{
		{"unknown fields", strings.Replace(specExample, `"provides": []`, `"provides": [], "future": {"Files": 1}, "notes": "x"`, 1)},
		{"other domains' fields", `{"runs": {"Node": "x"}, "provisioning": {}}`},
		{"placement names are the plan's", strings.Replace(specExample, `"http": "8417"`, `"HTTP": "8417", "Http": "1"`, 1)},
		{"have keys are the plan's", strings.Replace(specExample, `"provides": []`, `"provides": [{"provision": "p", "have": {"URL": "u", "url": "v"}}]`, 1)},
		{"answered-by as the sweep commit spells it", strings.Replace(specExample, `"provides": []`, `"provides": [{"provision": "p", "answered-by": "helper"}]`, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseAssignment("ace.claude-code", []byte(c.data)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Every example plan reads with its field names as they are.
func TestTheExamplePlansNameTheirFieldsExactly(t *testing.T) {
	paths, _ := filepath.Glob("../examples/mesh/assignments/*.json")
	if len(paths) == 0 {
		t.Fatal("no example plans")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		node, module, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".json"), ".")
		if _, err := ParseAssignment(spec.EncodeKey(node, module), data); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A plan followed by a null under its name (again, or but for case) is
// read by encoding/json as no plan: it is refused as given twice instead,
// never taken as another domain's value (the module would leave the
// node). Nulls alone are no plan, however named.
func TestAPlanAndANullUnderItsNameIsNoAssignmentWithoutAPlan(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"provisioning": {"files": []}, "provisioning": null}`, `field "provisioning" is given twice`},
		{`{"provisioning": {}, "Provisioning" : null}`, `field "Provisioning" is not "provisioning"`},
		{`{"runs": {"a": [1, "}"]}, "provisioning": {"x": "\"{"}, "PROVISIONING": null}`, `field "PROVISIONING" is not "provisioning"`},
	} {
		_, err := ParseAssignment("ace.web", []byte(c.data))
		if _, ok := errors.AsType[*PlanError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a PlanError saying %s", c.data, err, c.want)
		}
	}
	for _, data := range []string{`{"provisioning": null}`, `{"Provisioning": null, "provisioning": null}`, `{"runs": {"provisioning": {}}}`, `{}`} {
		if _, err := ParseAssignment("ace.web", []byte(data)); !errors.Is(err, ErrNoPlan) {
			t.Errorf("%s: got %v, want ErrNoPlan", data, err)
		}
	}
}

// A placement name or an offer's have key given twice in one object is
// read by encoding/json as its last value and by a reader taking the
// first as another: it is refused as a field given twice is, naming where
// it stands. The same name in two objects, or names differing in case,
// are distinct.
func TestANameGivenTwiceInAPlacementOrAHaveFailsTheModule(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{strings.Replace(specExample, `"http": "8417"`, `"http": "8417", "http": "9000"`, 1), `provisioning.placement.port: name "http" is given twice`},
		{strings.Replace(specExample, `"provides": []`, `"provides": [{"provision": "p", "have": {"url": "a", "url": "b"}}]`, 1), `provisioning.provides[0].have: name "url" is given twice`},
	} {
		_, err := ParseAssignment("ace.claude-code", []byte(c.data))
		if _, ok := errors.AsType[*PlanError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v; want a PlanError saying %s", err, c.want)
		}
	}
	ok := strings.Replace(specExample, `"http": "8417"`, `"http": "8417", "HTTP": "9000"`, 1)
	ok = strings.Replace(ok, `"provides": []`, `"provides": [{"provision": "p", "have": {"http": "a"}}, {"provision": "q", "have": {"http": "a"}}]`, 1)
	if _, err := ParseAssignment("ace.claude-code", []byte(ok)); err != nil {
		t.Fatal(err)
	}
}
