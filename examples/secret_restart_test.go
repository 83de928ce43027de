package examples

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestAnExampleSecretRestartsTheProgramThatReadsIt: a secret (or a named
// credential) the example writes to a path that a file of its module names
// restarts, on rotation, the program that file restarts (SPEC §3 r2: its
// on_change says which program reads it; the controller composes it for
// whatever names the secret's path). claude-code's config.toml names
// /etc/claude-code/api-key, so a rotated api-key restarts
// claude-code.service; before, the example's api-key had no on_change,
// and claude-code ran on the old key after a rotation.
func TestAnExampleSecretRestartsTheProgramThatReadsIt(t *testing.T) {
	m := loadExample(t)
	as := parseAll(t, m)
	checked := 0
	for _, key := range slices.Sorted(maps.Keys(as)) {
		p := as[key].Provisioning
		type held struct{ name, path, action, unit string }
		var secrets []held
		for _, s := range p.Secrets {
			secrets = append(secrets, held{"secret " + s.Name, s.Path, s.OnChange.Action, s.OnChange.Unit})
		}
		for _, pr := range p.Provisions {
			if pr.Name != "" {
				secrets = append(secrets, held{"credential " + pr.Name, pr.Path, pr.OnChange.Action, pr.OnChange.Unit})
			}
		}
		for _, s := range secrets {
			if s.path == "" {
				continue
			}
			for _, f := range p.Files {
				if !strings.Contains(string(m.Templates[as[key].Module][f.Template]), s.path) || f.OnChange.Action == "" || f.OnChange.Action == "none" {
					continue
				}
				checked++
				if s.action != f.OnChange.Action || s.unit != f.OnChange.Unit {
					t.Errorf("%s: %s at %s has on_change %q %q, but %s names its path and its program is on_change %q %q: a rotation would leave %s on the old value",
						key, s.name, s.path, s.action, s.unit, f.Path, f.OnChange.Action, f.OnChange.Unit, f.OnChange.Unit)
				}
			}
		}
	}
	for _, key := range []string{"ace.claude-code", "g14.claude-code"} {
		var found bool
		for _, s := range as[key].Provisioning.Secrets {
			if s.Name == "api-key" {
				found = true
				if s.OnChange.Action != "restart" || s.OnChange.Unit != "claude-code.service" {
					t.Errorf("%s: secret api-key on_change %+v, want restart claude-code.service", key, s.OnChange)
				}
			}
		}
		if !found {
			t.Errorf("%s: no secret api-key", key)
		}
	}
	if checked == 0 {
		t.Error("no secret path named by a file of its module: the check checked nothing")
	}
}
