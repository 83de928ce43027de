package nodes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// An on_change unit is a systemd unit name: ASCII letters, digits and
// ":-_.@\" (mesh-fill refuses any other with a 400, whatever --allow-unit
// says). A plan naming one holding a space, a quote, a shell
// metacharacter or a byte not ASCII fails its module at once, naming the
// entry and the unit, for a file, a secret's path and a credential's path
// alike. Before, the client took the plan and sent the file at every
// retry tick, each refused: the module's report said a 400 (withheld
// altogether when the request carried a secret). A template's instance
// and an escape are unit names.
func TestAnOnChangeUnitThatIsNoUnitNameFailsTheModuleAtOnce(t *testing.T) {
	for _, unit := range []string{"a b.service", "$(id).service", "a;b.service", `a"b.service`, "ünï.service", "a%b.service", "app*.service"} {
		for _, where := range []struct {
			name, want string
			at         func(m map[string]any) map[string]any
		}{
			{"file", "files[0] (/etc/claude-code/config.toml)", func(m map[string]any) map[string]any { return entry(m, "files", 0) }},
			{"secret", "secrets[0] (api-key)", func(m map[string]any) map[string]any { return entry(m, "secrets", 0) }},
		} {
			m := example(t)
			where.at(m)["on_change"] = map[string]any{"action": "restart", "unit": unit}
			_, err := ParseAssignment("ace.claude-code", marshal(t, m))
			var pe *PlanError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), where.want) ||
				!strings.Contains(err.Error(), fmt.Sprintf("unit %q is not a unit name", unit)) {
				t.Errorf("%s unit %q: got %v; want the module failed naming the entry and the unit", where.name, unit, err)
			}
		}
	}
	m := example(t)
	entry(m, "files", 0)["on_change"] = map[string]any{"action": "none", "unit": "a b.service"}
	if _, err := ParseAssignment("ace.claude-code", marshal(t, m)); err == nil || !strings.Contains(err.Error(), "is not a unit name") {
		t.Errorf("a unit with action none is sent all the same: got %v", err)
	}
	for _, unit := range []string{"claude-code.service", "getty@tty1.service", `mnt-a\x2db.mount`, "user-1000.slice", "a:b.service"} {
		m := example(t)
		entry(m, "files", 0)["on_change"] = map[string]any{"action": "reload", "unit": unit}
		if _, err := ParseAssignment("ace.claude-code", marshal(t, m)); err != nil {
			t.Errorf("unit %q: %v", unit, err)
		}
	}
}
