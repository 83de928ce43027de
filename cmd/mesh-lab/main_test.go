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
