package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// mesh-fill's -h, alone or after serve, prints its usage on stdout (as
// the other commands do), so `mesh-fill serve --help | less` shows it.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"serve", "--help"}, {"serve", "-h"}} {
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: %v, want flag.ErrHelp (exit 0)", args, err)
		}
		if !strings.Contains(out.String(), "usage: mesh-fill serve") || errb.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q; want the usage on stdout alone", args, out.String(), errb.String())
		}
	}
}

// TestTopHelpSaysWhereTheFlagsAreExplained: mesh-fill -h prints the usage
// line and, as the other commands do, says that serve's -h tells what its
// flags mean.
func TestTopHelpSaysWhereTheFlagsAreExplained(t *testing.T) {
	var out, errb bytes.Buffer
	_ = run(context.Background(), []string{"-h"}, &out, &errb)
	if want := usage + "\nmesh-fill serve -h says what its flags mean\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
}
