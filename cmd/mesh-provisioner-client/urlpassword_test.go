package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// urlPasswordChildEnv holds the arguments the child of
// TestAPasswordInTheNATSURLIsWarnedOf runs the client's `run` with: its
// log goes to the process's stderr.
const urlPasswordChildEnv = "CLIENT_URL_PASSWORD_CHILD"

// A password in --nats is seen in the process list by every user of the
// machine, as a --password would be (refused): run warns of it, naming
// where a password goes instead, and never repeats it.
func TestAPasswordInTheNATSURLIsWarnedOf(t *testing.T) {
	if args := os.Getenv(urlPasswordChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		os.Exit(run(append([]string{"run"}, a...), os.Stdout, os.Stderr))
	}
	// The state dir cannot be made: run ends at once, after the warning.
	args, _ := json.Marshal([]string{"--node", "ace", "--nats", "nats://provisioner-ace:hunter2@127.0.0.1:1",
		"--control", "", "--state-dir", "/proc/no/such/dir"})
	p := inChild(t, urlPasswordChildEnv+"="+string(args))
	_ = p.Cmd.Wait()
	out := p.Output()
	if !strings.Contains(out, "the --nats URL holds a password") || !strings.Contains(out, "--password-file") {
		t.Errorf("no warning of the password in --nats:\n%s", out)
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("the output repeats the password:\n%s", out)
	}
}
