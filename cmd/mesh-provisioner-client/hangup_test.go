package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// hangupChildEnv holds the arguments the child of
// TestTheClientLogsAndIgnoresSighupAndStopsOnSigterm runs the client's
// `run` with, as JSON: the signals are the process's.
const hangupChildEnv = "CLIENT_HANGUP_CHILD"

// The client as its own process: a SIGHUP (an operator's reload, a closed
// terminal) is logged and the client goes on answering its control socket;
// SIGTERM then stops it, exit 0, said as it comes and once done.
func TestTheClientLogsAndIgnoresSighupAndStopsOnSigterm(t *testing.T) {
	if args := os.Getenv(hangupChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		os.Exit(run(append([]string{"run"}, a...), os.Stdout, os.Stderr))
	}
	w, url, fillSock := newBareWorld(t)
	args, _ := json.Marshal([]string{"--node", "ace", "--nats", url, "--fill-socket", fillSock,
		"--state-dir", t.TempDir(), "--control", w.sock, "--refill", "1h"})
	p := inChild(t, hangupChildEnv+"="+string(args))
	exited := make(chan error, 1)
	go func() { exited <- p.Cmd.Wait() }()
	w.until("", "status", "--control", w.sock)

	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		if !strings.Contains(p.Output(), "SIGHUP: nothing to reload; ignored") {
			return errors.New("the log does not say the SIGHUP was ignored")
		}
		return nil
	})
	select {
	case err := <-exited:
		t.Fatalf("the client ended on SIGHUP: %v\n%s", err, p.Output())
	case <-time.After(time.Second):
	}
	if code, _, stderr := runCLI("status", "--control", w.sock); code != 0 {
		t.Fatalf("status after the SIGHUP: exit %d, %s", code, stderr)
	}

	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("SIGTERM: the client exited %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client still runs 10 s after SIGTERM")
	}
	out := p.Output()
	if i, j := strings.Index(out, `"message":"stopping: SIGTERM or SIGINT"`), strings.Index(out, `"message":"stopped"`); i < 0 || j < i {
		t.Errorf("the log does not say it is stopping, then stopped:\n%s", out)
	}
}
