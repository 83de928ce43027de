package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// linesOf is every log line since from (a length of m.logs) that is no
// debug line and names module cc, by its module or by its key.
func (m *mesh) linesOf(from int, module, key string) []string {
	var out []string
	for _, line := range strings.Split(m.logs.String()[from:], "\n") {
		if line == "" || strings.Contains(line, `"level":"debug"`) {
			continue
		}
		if strings.Contains(line, `"module":"`+module+`"`) || strings.Contains(line, `"key":"`+key+`"`) {
			out = append(out, line)
		}
	}
	return out
}

// SPEC §5.1: one log event per state change of a module. A plan this
// node's client refuses was said twice as it came (a warning "assignment
// refused", then "module failed" with the same reason), and the first
// again at every re-read of the bucket (each time the bus came back),
// the module's state unchanged. Now the module's state change says it,
// once; a plan refused for another reason while the module stays failed
// is said once too (the report's reason moved), and nothing is said at a
// re-read or a refill tick that changes nothing.
func TestABrokenPlanIsOneLogEventNotOnePerRead(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/web/c.conf", Template: "c"}}},
		map[string]string{"c": "web\n"})
	d := m.client("ace", func(c *Config) { c.Refill = 100 * time.Millisecond })
	m.waitState("ace", "web", "applied")
	m.settle()

	from := len(m.logs.String())
	m.put(spec.AssignmentsBucket, "ace.cc", `{"provisioning": {"files": 7}}`)
	m.waitState("ace", "cc", "failed")
	m.settle()
	lines := m.linesOf(from, "cc", "ace.cc")
	if len(lines) != 1 || !contains(lines[0], `"level":"warn"`) || !contains(lines[0], "provisioning.files is a number") {
		t.Fatalf("a broken plan was said in %d lines, want one warning with its reason:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	from = len(m.logs.String())
	for range 2 {
		d.events <- reconnected{} // read every bucket again
		m.settle()
	}
	time.Sleep(500 * time.Millisecond) // refill ticks
	m.settle()
	if lines := m.linesOf(from, "cc", "ace.cc"); len(lines) > 0 {
		t.Fatalf("re-reads and refill ticks that changed nothing said:\n%s", strings.Join(lines, "\n"))
	}

	from = len(m.logs.String())
	m.put(spec.AssignmentsBucket, "ace.cc", `{"provisioning": {"secrets": 7}}`)
	bustest.Eventually(t, 10*time.Second, func() error {
		if r, _ := m.report("ace", "cc"); r["state"] != "failed" || !contains(fmt.Sprint(r["reason"]), "secrets") {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	m.settle()
	lines = m.linesOf(from, "cc", "ace.cc")
	if len(lines) != 1 || !contains(lines[0], `"level":"warn"`) || !contains(lines[0], "provisioning.secrets") {
		t.Fatalf("a plan refused for another reason was said in %d lines, want one warning with the new reason:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	from = len(m.logs.String())
	m.assign("ace", "cc", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/cc/c.conf", Template: "c"}}},
		map[string]string{"c": "cc\n"})
	m.waitState("ace", "cc", "applied")
	m.settle()
	// failed → waiting (its archive fetched) → applied: one line each.
	lines = m.linesOf(from, "cc", "ace.cc")
	if len(lines) == 0 || len(lines) > 2 || !contains(lines[len(lines)-1], `"message":"module applied"`) ||
		len(lines) == 2 && !contains(lines[0], `"message":"module waiting"`) {
		t.Fatalf("the plan fixed was said in %d lines, want one per state:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// A re-read of the assignments (each time the bus comes back) wrote no
// assignment: it asks the vault again for what it refused (an assignment
// may have been put again meanwhile), but says so at debug level. It said
// "assignment written: the vault asked again for what it refused" at info,
// for every such module and every consumer whose credential was refused,
// at every reconnect, no module's state changed (SPEC §5.1). An
// assignment written is still said (TestARefusedSecretIsAskedAgainWhenItsModulesAssignmentIsWrittenAgain).
func TestAReReadOfTheAssignmentsSaysNoAssignmentWritten(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "sec", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/sec/c.conf", Template: "c"}}, Secrets: []nodes.SecretSpec{{Name: "r"}}},
		map[string]string{"c": "${secret:r}\n"})
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	v := m.devVault()
	v.Refuse(pair("g14", "cc", ""), "cc is not let in yet")
	v.Refuse("own/sec/r", "r is not let in yet")
	d := m.client("ace")
	m.waitState("ace", "sec", "failed")
	m.waitState("ace", "gitea", "applied")
	m.settle()
	from, asked := len(m.logs.String()), v.AskCount("own/sec/r")
	for i := range 2 {
		d.events <- reconnected{}
		// The refusals asked again, as before (within the reconnect's
		// spread: two reconnects at once are one ask).
		bustest.Eventually(t, 10*time.Second, func() error {
			if n := v.AskCount("own/sec/r"); n < asked+i+1 {
				return fmt.Errorf("asked %d times more", n-asked)
			}
			return nil
		})
		m.settle()
	}
	for _, line := range strings.Split(m.logs.String()[from:], "\n") {
		if contains(line, "assignment written") && !contains(line, `"level":"debug"`) {
			t.Errorf("a re-read said: %s", line)
		}
	}
}

// A module that stays waiting while what it waits for changes says so in
// its log: one event each time the kinds and names it waits for change
// (its archive fetched, then a config key still missing), none while they
// stay (a vault name asked again, a refill tick). Before, its one event
// named the archive it waited for a moment at first, and the config key
// that held it after was said nowhere in the log (an outside audit).
func TestAWaitingModuleSaysWhatItWaitsForWhenThatChanges(t *testing.T) {
	m := newMesh(t)
	m.client("ace", func(c *Config) { c.Refill = 100 * time.Millisecond })
	from := len(m.logs.String())
	m.assign("ace", "cw", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/cw/c.conf", Template: "c"}}},
		map[string]string{"c": "k=${config:k}\nj=${config:j}\n"})
	m.waitWaiting("ace", "cw", "config")
	m.settle()
	time.Sleep(300 * time.Millisecond) // refill ticks: nothing more to say
	m.settle()
	lines := m.linesOf(from, "cw", "ace.cw")
	last := lines[len(lines)-1]
	if !contains(last, `"message":"module waiting"`) || !contains(last, `"name":"k"`) || !contains(last, `"name":"j"`) {
		t.Fatalf("the log does not say cw waits for config k and j:\n%s", strings.Join(lines, "\n"))
	}
	from = len(m.logs.String())
	m.put(spec.ConfigBucket, "ace.cw.k", "1")
	bustest.Eventually(t, 10*time.Second, func() error {
		if lines := m.linesOf(from, "cw", "ace.cw"); len(lines) != 1 || !contains(lines[0], `"name":"j"`) || contains(lines[0], `"name":"k"`) {
			return fmt.Errorf("once k is there the log says:\n%s", strings.Join(lines, "\n"))
		}
		return nil
	})
	m.put(spec.ConfigBucket, "ace.cw.j", "2")
	m.waitState("ace", "cw", "applied")
}
