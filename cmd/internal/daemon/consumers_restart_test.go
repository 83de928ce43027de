package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// restartingProvider is gitea (giteaPlan) with its consumers file owned
// and gitea.service restarted when it changes, for tests that count the
// provider's restarts.
func (m *mesh) restartingProvider(node string) {
	m.t.Helper()
	p := giteaPlan()
	p.Files[0] = owned("/etc/gitea/consumers.json", "consumers", "gitea.service")
	m.assign(node, "gitea", p, giteaTemplates)
}

// A consumer's plan that does not parse leaves the provider untouched
// across a restart of the provider's client too (SPEC §3: "the other
// modules are untouched"): the bindings of its last plan that parsed are
// kept in the client's state dir while it does not parse, so the
// restarted client lists the consumer as before, and the provider's
// consumers file keeps its bytes and its program is not restarted — for a
// consumer on another node and one on the provider's own. Before, those
// bindings lived in memory only: the restarted client dropped the consumer,
// rewrote the provider's file without its credential and restarted it
// (and again once the plan was fixed). The kept copy goes when the plan
// parses again or its key is deleted; it holds names, never a credential.
func TestAConsumersPlanThatDoesNotParseLeavesTheProviderAloneAcrossItsClientsRestart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte("p1-secret"))
	v.Set(t.Context(), pair("ace", "dd", ""), []byte("p2-secret"))
	m.restartingProvider("ace")
	m.assign("g14", "cc", consumerPlan(), nil)
	m.assign("ace", "dd", consumerPlan(), nil)
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	both := []string{pair("ace", "dd", ""), pair("g14", "cc", "")}
	m.waitConsumers("/etc/gitea/consumers.json", both...)
	m.waitState("ace", "gitea", "applied")
	m.settle()
	bytesBefore, _, _ := m.file("/etc/gitea/consumers.json")
	restarts := f.programRestarts()

	untouched := func(when string) {
		t.Helper()
		m.waitState("ace", "gitea", "applied")
		m.settle()
		if text, _, _ := m.file("/etc/gitea/consumers.json"); text != bytesBefore {
			t.Errorf("%s: the provider's consumers file is %q, want %q", when, text, bytesBefore)
		}
		if got := f.programRestarts(); got != restarts {
			t.Errorf("%s: the provider's program was restarted: %q", when, strings.TrimPrefix(got, restarts))
		}
	}

	goodCC, _ := m.get(spec.AssignmentsBucket, "g14.cc")
	goodDD, _ := m.get(spec.AssignmentsBucket, "ace.dd")
	m.put(spec.AssignmentsBucket, "g14.cc", `garbage{`)
	m.put(spec.AssignmentsBucket, "ace.dd", `{"provisioning":{"provisions":[{"provider":5}]}}`)
	m.waitFailed("ace", "dd", "assignment JSON does not parse")
	untouched("the consumers' plans do not parse")

	stop()
	_, stop = m.startClient("ace", f.socket, sameState)
	m.waitFailed("ace", "dd", "assignment JSON does not parse")
	untouched("the provider's client restarted while the consumers' plans do not parse")
	for _, e := range m.stateFiles(state) {
		if strings.Contains(e, "p1-secret") || strings.Contains(e, "p2-secret") {
			t.Errorf("a credential reached the state dir: %q", e)
		}
	}

	// Fixed as they were: nothing moves, and a restart after still lists
	// them (from their plans, no longer from the kept copy).
	m.put(spec.AssignmentsBucket, "g14.cc", goodCC)
	m.put(spec.AssignmentsBucket, "ace.dd", goodDD)
	m.waitState("ace", "dd", "applied")
	untouched("the consumers' plans fixed")

	// Fixed to a plan that binds nothing, then broken: what is kept is
	// that plan's (nothing), at once and across a restart.
	m.assign("g14", "cc", nodes.Plan{}, nil)
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "dd", ""))
	m.put(spec.AssignmentsBucket, "g14.cc", `garbage{`)
	m.settle()
	stop()
	_, stop = m.startClient("ace", f.socket, sameState)
	m.waitState("ace", "gitea", "applied")
	m.settle()
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "dd", ""))

	// Broken, then deleted: the kept copy goes with the key, and a
	// restart on a value that does not parse again does not bring the
	// consumer back.
	m.put(spec.AssignmentsBucket, "ace.dd", `{"provisioning":`)
	m.waitFailed("ace", "dd", "does not parse")
	m.del(spec.AssignmentsBucket, "ace.dd")
	m.waitConsumers("/etc/gitea/consumers.json")
	m.settle()
	stop()
	m.put(spec.AssignmentsBucket, "ace.dd", `{"provisioning":`)
	_, stop = m.startClient("ace", f.socket, sameState)
	m.waitFailed("ace", "dd", "does not parse")
	m.waitState("ace", "gitea", "applied")
	m.settle()
	m.waitConsumers("/etc/gitea/consumers.json")

	// Bound, broken, then deleted while the client is down: the restarted
	// client forgets what it kept of it, and the key put back broken binds
	// nothing.
	m.put(spec.AssignmentsBucket, "g14.cc", goodCC)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", ""))
	m.put(spec.AssignmentsBucket, "g14.cc", `garbage{`)
	m.settle()
	stop()
	m.del(spec.AssignmentsBucket, "g14.cc")
	m.client("ace", f.socket, sameState)
	m.waitConsumers("/etc/gitea/consumers.json")
	m.waitState("ace", "gitea", "applied")
	m.settle()
	m.put(spec.AssignmentsBucket, "g14.cc", `garbage{`)
	m.settle()
	m.waitConsumers("/etc/gitea/consumers.json")
}

// stateFiles is the text of every file in the client's state dir but its
// templates cache.
func (m *mesh) stateFiles(dir string) []string {
	m.t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() && e.Name() == "templates" {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			b, _ := os.ReadFile(p)
			out = append(out, p+": "+string(b))
		}
		return nil
	})
	return out
}

// A provider's plan that does not parse leaves its consumers alone across
// a restart of a consumer's client too: the offers of its last plan that
// parsed are kept in the state dir with the bindings, so the restarted
// client judges the consumer's binding by them, and the consumer stays
// applied, its report and files as they were. Before, the restarted client
// had no offers of the provider: the consumer went waiting ("provider
// gitea's plan … is refused") until the provider's plan was fixed.
func TestAProvidersPlanThatDoesNotParseLeavesItsConsumersAloneAcrossTheirClientsRestart(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.boundConsumer() // gitea on novox, cc on ace
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"u","url":"h"}}`)
	events := m.appliedEvents("ace")
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitFile("/etc/cc/forge.toml", "user = u\nurl = h\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[`)
	m.settle()
	stop()

	seen := len(events())
	m.client("ace", sameState)
	m.waitState("ace", "cc", "applied")
	m.settle()
	if r, _ := m.report("ace", "cc"); r["state"] != "applied" {
		t.Errorf("the consumer is %v after its client restarted while its provider's plan does not parse", r)
	}
	for _, s := range events()[seen:] {
		t.Errorf("event %s after the client restarted while a provider's plan does not parse", s)
	}
	if text, _, _ := m.file("/etc/cc/forge.toml"); text != "user = u\nurl = h\n" {
		t.Errorf("the consumer's file is %q after its client restarted", text)
	}
}
