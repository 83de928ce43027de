package main

import (
	"strings"
	"testing"
)

// A nonsense duration is a usage error naming the flag, before anything
// starts (a negative --refill used to panic in time.NewTicker; a negative
// --refused-retry asked the vault thousands of times a second).
func TestRunRefusesNonsenseDurationsNamingTheFlag(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--refill", "-1s"}, {"--refill", "0s"}, {"--refused-retry", "-1s"}, {"--refused-retry", "0s"},
		{"--fetch-timeout", "0s"},
	} {
		code, _, stderr := runCLI("run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", c.flag, c.value)
		if code != 2 || !strings.Contains(stderr, c.flag+" "+c.value) || !strings.Contains(stderr, "more than zero") {
			t.Errorf("run %s %s: exit %d, stderr %q; want 2 naming the flag", c.flag, c.value, code, stderr)
		}
	}
}

// A password on the command line is seen by every user of the machine in
// the process list: it is refused, pointing at the file and the variable.
func TestRunRefusesAPasswordOnTheCommandLine(t *testing.T) {
	code, _, stderr := runCLI("run", "--node", "ace", "--user", "x", "--password", "hunter2")
	if code != 2 || !strings.Contains(stderr, "--password-file") || !strings.Contains(stderr, "MESH_NATS_PASSWORD") {
		t.Fatalf("exit %d, stderr %q; want 2 and where a password goes instead", code, stderr)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Fatalf("the refusal repeats the password: %q", stderr)
	}
	code, _, stderr = runCLI("run", "--help")
	if code != 0 || !strings.Contains(stderr, "password-file") || !strings.Contains(stderr, "MESH_NATS_PASSWORD") {
		t.Fatalf("--help: exit %d, does not say where the password goes: %q", code, stderr)
	}
}

// -h, --help and help print the usage and exit 0, on the command and on
// each subcommand; a command that is not one, or graph alone, is a usage
// error that shows the usage.
func TestHelpExitsZeroAndAWrongCommandShowsTheUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"run", "-h"}, {"status", "--help"},
		{"graph", "explain", "-h"}, {"graph", "dot", "--help"}} {
		if code, stdout, stderr := runCLI(args...); code != 0 || !strings.Contains(stdout+stderr, "usage") && !strings.Contains(stdout+stderr, "Usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"graph"}, {"nosuch"}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "usage: mesh-provisioner-client") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the usage", args, code, stderr)
		}
	}
}
