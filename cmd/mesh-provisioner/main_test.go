package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestServeRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"run"},
		{"serve"}, // --nats missing
		{"serve", "--nats", "nats://x", "--log-format", "xml"},
		{"serve", "--nats", "nats://x", "--log-level", "loud"},
		{"serve", "--nats", "nats://x", "--registry-every", "0s"},
		{"serve", "--nats", "nats://x", "--replicas", "0"},
		{"serve", "--nats", "nats://x", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, stderr.String())
		}
	}
}
