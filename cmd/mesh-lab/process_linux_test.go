package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
)

// The lab as a person runs it: its own process, stopped by a signal. What
// it must leave: nothing running, no port open, nothing in $TMPDIR (where
// its sockets go when --dir is too long a path for them), no socket in
// --dir.

var natsURL = regexp.MustCompile(`NATS +nats://(127\.0\.0\.1:\d+)`)

// labRun is one mesh-lab process with --port 0 and a --dir long enough
// that its sockets go to a directory of their own under tmp.
type labRun struct {
	dir, tmp, out string
}

func newLabRun(t *testing.T) *labRun {
	t.Helper()
	base := t.TempDir()
	// A TMPDIR of its own, short enough for the sockets' paths.
	tmp, err := os.MkdirTemp("", "ml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	return &labRun{
		dir: filepath.Join(base, "lab-"+strings.Repeat("d", 90)),
		tmp: tmp,
		out: filepath.Join(base, "out"),
	}
}

func (r *labRun) args() []string {
	return []string{"--port", "0", "--dir", r.dir, "--log-level", "error"}
}

func (r *labRun) output() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}

// ready waits until the lab says it runs until Ctrl-C and returns its
// NATS address.
func (r *labRun) ready(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		out := r.output()
		if strings.Contains(out, "The lab runs until Ctrl-C") {
			if m := natsURL.FindStringSubmatch(out); m != nil {
				return m[1]
			}
			t.Fatalf("no NATS address in the lab's output:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the lab did not settle within 90s:\n%s", r.output())
	return ""
}

// leftNothing checks that the lab, gone, left nothing behind.
func (r *labRun) leftNothing(t *testing.T, addr string) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still answers after the lab stopped", addr)
	}
	if ents, err := os.ReadDir(r.tmp); err != nil || len(ents) > 0 {
		t.Errorf("the lab left %v in its TMPDIR (%v)", ents, err)
	}
	filepath.WalkDir(r.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			t.Errorf("the lab left the socket %s", p)
		}
		return nil
	})
	if !strings.Contains(r.output(), "\nstopping\n") {
		t.Errorf("the lab did not say it stopped:\n%s", r.output())
	}
}

// alive says whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestASignalStopsTheLabAndItLeavesNothing: SIGINT (Ctrl-C) and SIGTERM
// each stop a running lab with exit 0, its port closed, its sockets and
// the temporary directory of its sockets gone.
func TestASignalStopsTheLabAndItLeavesNothing(t *testing.T) {
	bin := proctest.Build(t, "github.com/novox/mesh-provisioner/cmd/mesh-lab", "")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newLabRun(t)
			out, err := os.Create(r.out)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd := exec.Command(bin, r.args()...)
			cmd.Stdout, cmd.Stderr = out, out
			cmd.Env = append(os.Environ(), "TMPDIR="+r.tmp)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			addr := r.ready(t)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("after %v the lab exited with %v:\n%s", sig, err, r.output())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the lab still runs 60s after %v:\n%s", sig, r.output())
			}
			r.leftNothing(t, addr)
		})
	}
}

// TestTheLabStopsWhenWhatStartedItGoes: `go run ./cmd/mesh-lab` is the
// go command running the lab as its child, and a SIGTERM to the go command
// ends it alone; the lab, orphaned, ran on with its port, sockets and
// store. The lab stops (as for SIGTERM) when the process that started it
// goes, here a shell killed outright.
func TestTheLabStopsWhenWhatStartedItGoes(t *testing.T) {
	bin := proctest.Build(t, "github.com/novox/mesh-provisioner/cmd/mesh-lab", "")
	r := newLabRun(t)
	sh := exec.Command("sh", "-c", `"$0" "$@" >"$OUT" 2>&1 & echo $!; wait`, bin)
	sh.Args = append(sh.Args, r.args()...)
	sh.Env = append(os.Environ(), "TMPDIR="+r.tmp, "OUT="+r.out)
	pipe, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		t.Fatalf("the shell said no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	addr := r.ready(t)
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := sh.Wait(); err == nil || !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("the shell: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the lab (pid %d) still runs 60s after what started it went:\n%s", pid, r.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.leftNothing(t, addr)
	if t.Failed() {
		fmt.Println(r.output())
	}
}
