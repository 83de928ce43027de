package main

import (
	"io"
	"strings"
	"testing"
)

// TestBadFlagsAreRefusedBeforeServing: a flag out of shape is an error that
// names it, and nothing is served.
func TestBadFlagsAreRefusedBeforeServing(t *testing.T) {
	sock := t.TempDir() + "/fill.sock"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--socket", sock, "--syncfs-from", "-1"}, "--syncfs-from -1: want 0 (never) or a number of files"},
		{[]string{"serve", "--socket", sock, "--allow-uid", "root"}, `--allow-uid: "root" is not a uid`},
		{[]string{"serve", "--socket", sock, "--log-format", "xml"}, `--log-format "xml" is not json or console`},
		{[]string{"fill"}, "usage: mesh-fill serve"},
	} {
		err := run(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %s", tc.args, err, tc.want)
		}
	}
}
