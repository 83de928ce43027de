package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
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
		{"serve", "--nats", "bogus://x"},
		{"serve", "--nats", "nats://:4222"},
		{"serve", "--nats", "nats://x", "--metrics", "bogus"},
		{"serve", "--nats", "nats://x", "--metrics", "127.0.0.1:99999"},
		{"serve", "--nats", "nats://x", "--metrics", ":-1"},
		{"serve", "--nats", "nats://x", "--metrics", "127.0.0.1:nosuchservice"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// -h, --help and help print the usage and exit 0, as each subcommand's -h
// does; no command, or one that is not, is a usage error.
func TestHelpExitsZeroAndNoCommandIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"serve", "-h"}, {"sweep", "--help"}, {"rights", "-h"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(strings.ToLower(stdout.String()+stderr.String()), "usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage", args, code, stdout.String(), stderr.String())
		}
	}
	for _, args := range [][]string{{}, {"nosuch"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: mesh-provisioner") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the usage", args, code, stderr.String())
		}
		if len(args) > 0 && !strings.Contains(stderr.String(), `unknown command "nosuch"`) {
			t.Errorf("%v: stderr %q does not say the command is unknown", args, stderr.String())
		}
	}
}

// A sweep on a bus where no server answers says so, and what to look at.
func TestASweepNoServerAnswersSaysSo(t *testing.T) {
	s := bustest.Start(t)
	code, out, errs := runSweep("--nats", s.ClientURL())
	if code != 2 || out != "" || !strings.Contains(errs, "no server answers mesh-provisioner.provisioning") ||
		!strings.Contains(errs, "is mesh-provisioner serve running?") {
		t.Errorf("a sweep with no server: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
