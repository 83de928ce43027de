package main

import (
	"bytes"
	"strings"
	"testing"
)

// Each command's -h prints its usage on stdout, so `… --help | less` shows
// it, and exits 0; a bad flag is said on stderr with exit 2.
func TestEachCommandsHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--help"}, {"run", "-h"}, {"status", "-help"},
		{"graph", "explain", "--help"}, {"graph", "dot", "--help"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Errorf("%q: exit %d, want 0 (stderr %q)", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "-control") || errb.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q; want the flags on stdout alone", args, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--no-such-flag"}, &out, &errb); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("a bad flag: exit %d, stdout %q, stderr %q; want 2, the error on stderr alone", code, out.String(), errb.String())
	}
}

// The command's own usage (-h, or no command) names each command with the
// flags SPEC §7 gives it, as mesh-provisioner's does, and each command's -h
// names the program: "Usage of mesh-provisioner-client run:", not "Usage
// of run:".
func TestUsageNamesEveryCommandWithItsSpecFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	lines := map[string][]string{
		"mesh-provisioner-client run ":           {"--node", "--nats", "--creds", "--fill-socket", "--state-dir", "--control", "--refill"},
		"mesh-provisioner-client status ":        {"--control", "--json"},
		"mesh-provisioner-client graph explain ": {"--json", "--control", "<module>"},
		"mesh-provisioner-client graph dot ":     {"--module", "--control"},
	}
	for prefix, flags := range lines {
		var line string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, prefix) {
				line = l
			}
		}
		if line == "" {
			t.Errorf("-h names no %q line:\n%s", prefix, out.String())
			continue
		}
		for _, f := range flags {
			if !strings.Contains(line, f) {
				t.Errorf("-h's %q line lacks %s: %q", prefix, f, line)
			}
		}
	}
	for _, args := range [][]string{{"run", "-h"}, {"status", "-h"}, {"graph", "dot", "-h"}} {
		out.Reset()
		run(args, &out, &errb)
		want := "Usage of mesh-provisioner-client " + strings.Join(args[:len(args)-1], " ") + ":"
		if !strings.HasPrefix(out.String(), want) {
			t.Errorf("%q: %q, want it to begin %q", args, firstLine(out.String()), want)
		}
	}
	errb.Reset()
	if code := run([]string{"nosuch"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "nosuch"`) ||
		!strings.Contains(errb.String(), "mesh-provisioner-client run ") {
		t.Errorf("an unknown command: exit %d, stderr %q", code, errb.String())
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// TestMistypedGraphCommandsSayWhatWasMeant: "explain" or "dot" without
// "graph" before them, and a misspelt graph command, are named with the
// command that was meant, not only the whole usage.
func TestMistypedGraphCommandsSayWhatWasMeant(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"explain", "grafana"}, `unknown command "explain": it is "mesh-provisioner-client graph explain <module>"`},
		{[]string{"dot"}, `unknown command "dot": it is "mesh-provisioner-client graph dot"`},
		{[]string{"graph", "explan", "grafana"}, `unknown graph command "explan": graph explain <module> or graph dot`},
		{[]string{"graph"}, `graph needs explain <module> or dot`},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != 2 || firstLine(errb.String()) != c.says || out.Len() != 0 ||
			!strings.Contains(errb.String(), "mesh-provisioner-client graph explain [--json]") {
			t.Errorf("%q: exit %d, stderr %q; want 2, a first line %q and the usage", c.args, code, errb.String(), c.says)
		}
	}
}
