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
		{"serve", "--help"}, {"sweep", "-h"}, {"sweep", "--help"}, {"rights", "-help"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Errorf("%q: exit %d, want 0 (stderr %q)", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "-nats") && !strings.Contains(out.String(), "-role") || errb.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q; want the flags on stdout alone", args, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"sweep", "--no-such-flag"}, &out, &errb); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("a bad flag: exit %d, stdout %q, stderr %q; want 2, the error on stderr alone", code, out.String(), errb.String())
	}
}

// TestTopHelpSaysWhereTheFlagsAreExplained: mesh-provisioner -h lists the
// commands with their flags and, as the client's does, says that each
// command's -h tells what they mean.
func TestTopHelpSaysWhereTheFlagsAreExplained(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.HasSuffix(out.String(), "\neach command with -h says what its flags mean\n") {
		t.Errorf("exit %d, stdout %q; want 0 and a usage ending with where the flags are explained", code, out.String())
	}
}
