package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// serve and sweep log in as password users of the example configuration
// with --user and --password-file or $MESH_NATS_PASSWORD, as the client
// does, so that no password need be in the URL (which every user of the
// machine sees in the process list): they took only --creds or a URL
// password (an outside audit). No password is in any output.
func TestServeAndSweepLogInAsPasswordUsers(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
	serverPW, operatorPW := auth.DevPassword("mesh-provisioner"), auth.DevPassword("mesh-operator")
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(serverPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var outputs []string
	defer func() {
		for _, o := range outputs {
			if strings.Contains(o, serverPW) || strings.Contains(o, operatorPW) {
				t.Errorf("the output holds a password:\n%s", o)
			}
		}
	}()

	// A wrong password: the bus's reason, and no hint to give --creds.
	t.Setenv(cli.PasswordEnv, "not-its-password")
	code, out, errs := runSweep("--nats", s.ClientURL(), "--user", "mesh-operator")
	outputs = append(outputs, out, errs)
	if code != 2 || !strings.Contains(errs, "Authorization Violation") || strings.Contains(errs, "no --creds given") {
		t.Errorf("sweep with a wrong password: exit %d, stderr %q; want 2, the bus's reason and no --creds hint", code, errs)
	}
	if strings.Contains(errs, "not-its-password") {
		t.Errorf("the error holds the password: %q", errs)
	}
	// The file is read before the environment: serve logs in with the
	// server's password, the sweeps below with the operator's.
	t.Setenv(cli.PasswordEnv, operatorPW)

	type result struct {
		code     int
		out, err string
	}
	served := make(chan result, 1)
	var serveErr bustest.Buffer
	go func() {
		var o bustest.Buffer
		code := run([]string{"serve", "--nats", s.ClientURL(), "--user", "mesh-provisioner", "--password-file", file}, &o, &serveErr)
		served <- result{code, o.String(), serveErr.String()}
	}()
	// The operator's sweep is answered: serve is serving, and the sweep
	// took its replies on the operator's inbox (_INBOX.mesh-operator).
	bustest.Eventually(t, 30*time.Second, func() error {
		code, out, errs = runSweep("--nats", s.ClientURL(), "--user", "mesh-operator")
		if code != 0 || !strings.Contains(out, "modules 0") {
			return fmt.Errorf("sweep as mesh-operator: exit %d\n%s%s\nserve logged:\n%s", code, out, errs, serveErr.String())
		}
		return nil
	})
	outputs = append(outputs, out, errs)
	// serve stops on SIGINT (its signal context, registered before it
	// connected, takes it; a serve already ended would leave the signal
	// to end the test binary).
	select {
	case r := <-served:
		t.Fatalf("serve ended: exit %d\n%s", r.code, r.err)
	default:
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-served:
		outputs = append(outputs, r.out, r.err)
		t.Logf("serve logged:\n%s", r.err)
		if r.code != 0 || !strings.Contains(r.err, "provisioner server serving") {
			t.Errorf("serve: exit %d; want 0 after serving", r.code)
		}
		if strings.Contains(r.err, "holds a password") || strings.Contains(r.err, "Authorization Violation") {
			t.Errorf("serve warned of a URL password or was refused")
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still running 20 s after SIGINT:\n%s", serveErr.String())
	}
}

// A --user with no password is a start error, exit 2, for serve and sweep
// as for the client, before the bus is asked; a --password on the command
// line is refused, not repeated.
func TestServeAndSweepRefuseAUserWithNoPasswordAndAPasswordArgument(t *testing.T) {
	t.Setenv(cli.PasswordEnv, "")
	for _, c := range []struct{ cmd, user string }{{"serve", "mesh-provisioner"}, {"sweep", "mesh-operator"}} {
		code, out, errs := runFor(t, 10*time.Second, c.cmd, "--nats", "nats://127.0.0.1:1", "--user", c.user)
		want := "mesh-provisioner " + c.cmd + ": --user " + c.user + " has no password: give --password-file F (its first line the password) or set $MESH_NATS_PASSWORD"
		if code != 2 || out != "" || !strings.Contains(errs, want) || strings.Contains(errs, "connecting") {
			t.Errorf("%s --user %s: exit %d, stdout %q, stderr %q; want 2 and %q", c.cmd, c.user, code, out, errs, want)
		}
		code, out, errs = runFor(t, 10*time.Second, c.cmd, "--nats", "nats://127.0.0.1:1", "--user", c.user, "--password=hunter2")
		if code != 2 || !strings.Contains(errs, "--password is not accepted") || !strings.Contains(errs, "--password-file") {
			t.Errorf("%s --password: exit %d, stderr %q; want 2 and where a password goes instead", c.cmd, code, errs)
		}
		if strings.Contains(out+errs, "hunter2") {
			t.Errorf("%s --password: the refusal repeats the password: %q", c.cmd, errs)
		}
	}
}

// The sweep's reply prefix for --user is _INBOX.<user> (a user's own, in
// the example configuration), unless a user in the URL logs in instead
// (nats.go takes the URL's) or the user is no subject token.
func TestSweepInboxOfAUser(t *testing.T) {
	u := &url.URL{Scheme: "nats", Host: "127.0.0.1:4222"}
	plain := u.String()
	u.User = url.UserPassword("mesh-provisioner", "x")
	withUser := u.String()
	for _, c := range []struct{ user, url, want string }{
		{"mesh-operator", plain, "_INBOX.mesh-operator"},
		{"mesh-operator", withUser, "_INBOX.mesh-provisioner"},
		{"a.b", plain, sweepInbox},
		{"", plain, sweepInbox},
	} {
		if got := inboxFor("", "", c.user, c.url); got != c.want {
			t.Errorf("--user %q --nats %s: inbox %q, want %q", c.user, c.url, got, c.want)
		}
	}
}
