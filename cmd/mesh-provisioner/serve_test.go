package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// runFor runs the command with args, failing the test when it has not
// ended within d (a server that does not give up would run for ever).
func runFor(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var o, e bustest.Buffer // the server's goroutines log at once
		code := run(args, &o, &e)
		done <- result{code, o.String(), e.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("%q still running after %v", args, d)
		return 0, "", ""
	}
}

// A creds file that is missing or malformed is named at once, exit 2, by
// serve and sweep alike, instead of a connection refused and retried.
func TestServeAndSweepNameABadCredsFile(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "server.creds")
	if err := os.WriteFile(malformed, []byte("not a creds file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nosuch.creds")
	busURL := bustest.Start(t).ClientURL()
	for _, c := range []struct{ file, says string }{{malformed, "is malformed"}, {missing, "is missing"}} {
		for _, cmd := range []string{"serve", "sweep"} {
			code, _, errs := runFor(t, 10*time.Second, cmd, "--nats", busURL, "--creds", c.file)
			if code != 2 || !strings.Contains(errs, "creds file "+c.file+" "+c.says) {
				t.Errorf("%s --creds %s: exit %d, stderr %q; want 2 saying it %s", cmd, c.file, code, errs, c.says)
			}
		}
	}
}

// A bus that refuses the server's user ends serve: exit 1 (its supervisor
// starts it again), the log saying the bus's reason.
func TestServeExitsOneWhenTheBusRefusesItsUser(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
	u, _ := url.Parse(s.ClientURL())
	u.User = url.UserPassword("mesh-provisioner", "not-its-password")
	code, _, errs := runFor(t, 10*time.Second, "serve", "--nats", u.String())
	t.Logf("serve logged:\n%s", errs)
	if code != 1 || !strings.Contains(errs, "Authorization Violation") || !strings.Contains(errs, "provisioner server failed") {
		t.Errorf("exit %d; want 1 and a log naming the authorization violation", code)
	}
}

// Creds of another role (a node's client's, copied into the server's unit)
// are named before serve starts, exit 2, as a malformed file is and as the
// client names another node's: the server could connect with them, then
// hear no reply, and its supervisor would start it again every 2 s.
func TestServeNamesTheCredsOfAnotherRoleAtOnce(t *testing.T) {
	op, err := auth.NewOperator("test")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := spec.RightsOf(spec.RoleClient, "ace", nil)
	b, err := op.Creds(r, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "server.creds")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runFor(t, 10*time.Second, "serve", "--nats", "nats://127.0.0.1:1", "--creds", path)
	want := "mesh-provisioner serve: creds file " + path + " is for user provisioner-ace, who may not hear replies on _INBOX.mesh-provisioner.>"
	if code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}

// A password in --nats is seen in the process list by every user of the
// machine: serve warns of it (a creds file keeps it off the command line)
// and never repeats it.
func TestServeWarnsOfAPasswordInTheNATSURL(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
	u, _ := url.Parse(s.ClientURL())
	u.User = url.UserPassword("mesh-provisioner", "not-its-password")
	_, _, errs := runFor(t, 10*time.Second, "serve", "--nats", u.String())
	if !strings.Contains(errs, "the --nats URL holds a password") || !strings.Contains(errs, "--creds") {
		t.Errorf("no warning of the password in --nats:\n%s", errs)
	}
	if strings.Contains(errs, "not-its-password") {
		t.Errorf("the log repeats the password:\n%s", errs)
	}
}
