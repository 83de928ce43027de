package nodes

// ParseAssignment's JSON, refs, limits and modes (plan_test.go has the
// example plan and the rules).

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseAssignmentJSON(t *testing.T) {
	// JSON that is not an object carries no provisioning: not ours (SPEC §3 r2).
	for _, data := range []string{`[]`, `"x"`, `1`, `null`} {
		if a, err := ParseAssignment("ace.claude-code", []byte(data)); !errors.Is(err, ErrNoPlan) || a != nil {
			t.Errorf("%q: %v, %v; want ErrNoPlan", data, a, err)
		}
	}
	if _, err := ParseAssignment("ace.claude-code", []byte("null x")); err == nil || !strings.Contains(err.Error(), "is not JSON") {
		t.Errorf("null x: error %v, want it to say it is not JSON", err)
	}
	// Not UTF-8: JSON would read U+FFFD where the plan has other bytes.
	if _, err := ParseAssignment("ace.claude-code", []byte("{\"provisioning\":{\"files\":[{\"path\":\"/etc/x\xffy\"}]}}")); err == nil ||
		!strings.Contains(err.Error(), "not UTF-8 text (byte 41)") {
		t.Errorf("a plan that is not UTF-8: error %v", err)
	}
	for _, data := range []string{"", "{", `{"node": 1, "provisioning": {}}`} {
		_, err := ParseAssignment("ace.claude-code", []byte(data))
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if err == nil || !(errors.As(err, &se) || errors.As(err, &te)) || !strings.Contains(err.Error(), `module "claude-code"`) {
			t.Errorf("%q: error %v, want the JSON error wrapped and the module named", data, err)
		}
	}
}

func TestParseAssignmentNoTemplatesNeeded(t *testing.T) {
	// A provider-only plan with no files and no items needs no archive.
	_, err := ParseAssignment("ace.gitea", []byte(`{"node":"ace","module":"gitea","provisioning":{"provides":["gitea-read"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseAssignment("ace.gitea", []byte(`{"node":"ace","module":"gitea","provisioning":{"items":[{"collection":"c","template":"t"}]}}`))
	if err == nil || !strings.Contains(err.Error(), "templates.ref") {
		t.Fatalf("items without an archive: %v", err)
	}
}

// A file:// ref is file:///<absolute path>, or the same path on the host
// "localhost" (RFC 8089: file://localhost/p is file:///p).
func TestParseAssignmentFileRef(t *testing.T) {
	for _, ref := range []string{"file:///srv/templates/cc.tar.gz", "file://localhost/srv/templates/cc.tar.gz",
		"file://LOCALHOST/srv/templates/cc.tar.gz"} {
		m := example(t)
		plan(m)["templates"].(map[string]any)["ref"] = ref
		if _, err := ParseAssignment("ace.claude-code", marshal(t, m)); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

func TestParseAssignmentLimits(t *testing.T) {
	for _, field := range []string{"files", "secrets", "provisions", "items"} {
		t.Run(field, func(t *testing.T) {
			m := example(t)
			many := make([]any, MaxPlanEntries+1)
			for i := range many {
				n := fmt.Sprint(i)
				switch field {
				case "files":
					many[i] = map[string]any{"path": "/etc/f" + n, "template": "t"}
				case "secrets":
					many[i] = map[string]any{"name": "s" + n}
				case "provisions":
					many[i] = map[string]any{"provision": "p" + n, "provider": "gitea", "credential": "token"}
				case "items":
					many[i] = map[string]any{"collection": "c" + n, "template": "t"}
				}
			}
			plan(m)[field] = many[:MaxPlanEntries]
			if _, err := ParseAssignment("ace.claude-code", marshal(t, m)); err != nil {
				t.Fatalf("%d %s refused: %v", MaxPlanEntries, field, err)
			}
			plan(m)[field] = many
			_, err := ParseAssignment("ace.claude-code", marshal(t, m))
			if err == nil || !strings.Contains(err.Error(), "10000") || !strings.Contains(err.Error(), "MaxPlanEntries") ||
				!strings.Contains(err.Error(), field) {
				t.Fatalf("%d %s: error %v, want the limit named", MaxPlanEntries+1, field, err)
			}
		})
	}
}

func TestDefaultMode(t *testing.T) {
	for _, c := range []struct {
		form     string
		secret   bool
		planMode string
		want     string
	}{
		{"owned", false, "", "0644"},
		{"owned", false, "0640", "0640"},
		{"seed", false, "755", "0755"},
		{"managed-keys", false, "0600", "0600"},
		{"managed-keys", false, "", ""}, // the node-engine's: kept when there, 0644 when made
		{"managed-block", false, "", ""},
		{"managed-block", false, "junk", ""},
		{"seed", false, "", "0644"},
		{"managed-keys", true, "", "0600"},
		{"owned", true, "", "0600"},
		{"owned", true, "0640", "0600"},
		{"owned", true, "0644", "0600"},
		{"owned", true, "0755", "0600"},
		{"owned", true, "4600", "0600"},
		{"owned", true, "0400", "0600"}, // whatever the plan says (SPEC §3)
		{"owned", true, "0600", "0600"},
		{"owned", true, "0200", "0600"},
		{"managed-block", true, "0700", "0600"},
		{"owned", true, "junk", "0600"},
		{"owned", false, "junk", "0644"},
	} {
		if got := DefaultMode(c.form, c.secret, c.planMode); got != c.want {
			t.Errorf("DefaultMode(%q, %v, %q) = %q, want %q", c.form, c.secret, c.planMode, got, c.want)
		}
	}
}

// A secret written to its own path is 0600 unless the plan says stricter.
func TestSecretFileMode(t *testing.T) {
	for plan, want := range map[string]string{"": "0600", "0640": "0600", "0644": "0600", "0755": "0600", "4600": "0600",
		"0400": "0400", "0600": "0600", "0200": "0200", "junk": "0600"} {
		if got := SecretFileMode(plan); got != want {
			t.Errorf("SecretFileMode(%q) = %q, want %q", plan, got, want)
		}
	}
}
