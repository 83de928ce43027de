package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestASweepNarrowedToANameNothingBearsExitsTwo: `mesh-provisioner sweep
// --module <typo>` (or `--node <unknown>`) run by a cron job must not pass
// for ever as a mesh with nothing held back: a module or node assigned
// nowhere whose name no key of the needs, applied and collect buckets
// bears is a sweep that could not be made, exit 2, saying so. A module
// assigned nowhere whose keys are left (orphans) is a real sweep, and so
// is one assigned without a provisioning plan: exit 0 when nothing holds
// back. Run as the built command, as the cron job runs it.
func TestASweepNarrowedToANameNothingBearsExitsTwo(t *testing.T) {
	bin := proctest.Build(t, "github.com/novox/mesh-provisioner/cmd/mesh-provisioner", "")
	url := sweepMesh(t, true, func(b sweepBuckets) {
		b.put(b.assignments, "ace.web", map[string]any{"provisioning": map[string]any{}})
		b.put(b.assignments, "ace.noplan", map[string]any{"node": "ace", "module": "noplan"})
		b.put(b.needs, spec.EncodeKey("ace", "web", "config", "model"),
			map[string]string{"node": "ace", "module": "web", "kind": "config", "name": "model", "state": "met", "why": ""})
		b.put(b.applied, "ace.web", map[string]any{"node": "ace", "module": "web", "state": "applied"})
		b.put(b.applied, "old.gone", map[string]any{"node": "old", "module": "gone", "state": "applied"})
	})
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"sweep", "--nats", url}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, o.String(), e.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), o.String(), e.String()
		}
		t.Fatalf("running %s: %v", bin, err)
		return 0, "", ""
	}

	for _, c := range []struct {
		args []string
		code int
		says string // on stderr
	}{
		{[]string{"--module", "wbe"}, 2, "no module wbe is assigned anywhere and no key names it"},
		{[]string{"--module", "wbe", "--json"}, 2, "no module wbe is assigned anywhere and no key names it"},
		{[]string{"--node", "nosuch"}, 2, "no module is assigned to node nosuch and no key names it"},
		{[]string{"--node", "ace", "--module", "wbe"}, 2, "no module wbe is assigned to node ace and no key names it"},
		{[]string{"--module", "gone"}, 0, ""},
		{[]string{"--node", "old"}, 0, ""},
		{[]string{"--module", "noplan"}, 0, ""},
		{[]string{"--module", "web"}, 0, ""},
	} {
		code, out, errs := run(c.args...)
		if code != c.code || c.says != "" && !strings.Contains(errs, c.says) || c.says == "" && strings.Contains(errs, "no key names it") {
			t.Errorf("sweep %s: exit %d, want %d saying %q\nstdout:\n%sstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.says, out, errs)
		}
	}
	if _, out, _ := run("--module", "gone"); !strings.Contains(out, "old.gone") {
		t.Errorf("the sweep of a module with orphan keys does not name them:\n%s", out)
	}
}
