package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "-1"},
		{"--port", "70000"},
		{"--log-format", "xml"},
		{"--log-level", "loud"},
		{"--no-such-flag"},
		{"extra"},
		{"--settle", "0s"},
		{"--settle", "-1m"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr, nil); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// TestHelpSaysWhatTheLabIs: -h says what the lab runs, where it prints
// what to try and how it stops, before its flags; the flag package's own
// would list the flags under "Usage of mesh-lab:" alone.
func TestHelpSaysWhatTheLabIs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-h"}, &stdout, &stderr, nil)
	head := "usage: mesh-lab [--port 4222] [--dir ./.lab] [--keep] [--once] [--settle 1m] [--log-format console|json] [--log-level warn]\n" +
		"runs the example mesh (examples/) on this machine: nats-server, the provisioner server, a dev vault,\n" +
		"and a mesh-fill and a client for each of the nodes ace and g14; it prints the bus's URL, where the\n" +
		"files are and what to try in another terminal. Ctrl-C stops it. --port 0: any free port.\n"
	if code != 0 || !strings.HasPrefix(stdout.String(), head) || !strings.Contains(stdout.String(), "\n  -port int\n") || stderr.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and stdout beginning %q, then the flags", code, stdout.String(), stderr.String(), head)
	}
}
