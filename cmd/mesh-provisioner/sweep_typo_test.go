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

// TestASweepNarrowedToANameNothingBearsSaysSo: `mesh-provisioner sweep
// --module <typo>` (or `--node <unknown>`) says on stderr that no module
// is assigned there and no key names it, and prints the reply as it is
// (nothing_named in --json); its exit status is SPEC §6.2's, 0: the sweep
// was made and nothing failed or stood asked. A module assigned nowhere
// whose keys are left (orphans) is a real sweep, and so is one assigned
// without a provisioning plan: nothing said of a name. Run as the built
// command, as a cron job runs it.
func TestASweepNarrowedToANameNothingBearsSaysSo(t *testing.T) {
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
		{[]string{"--module", "wbe"}, 0, "no module wbe is assigned anywhere and no key names it"},
		{[]string{"--module", "wbe", "--json"}, 0, "no module wbe is assigned anywhere and no key names it"},
		{[]string{"--node", "nosuch"}, 0, "no module is assigned to node nosuch and no key names it"},
		{[]string{"--node", "ace", "--module", "wbe"}, 0, "no module wbe is assigned to node ace and no key names it"},
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
	if _, out, _ := run("--module", "wbe", "--json"); !strings.Contains(out, `"nothing_named": "no module wbe is assigned anywhere and no key names it"`) {
		t.Errorf("sweep --module wbe --json does not say nothing_named:\n%s", out)
	}
	if _, out, _ := run("--module", "gone"); !strings.Contains(out, "old.gone") {
		t.Errorf("the sweep of a module with orphan keys does not name them:\n%s", out)
	}
}
