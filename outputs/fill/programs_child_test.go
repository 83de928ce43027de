package fill

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOnChangeChildDoesNotHold: a lab's on-change command that leaves a
// child running (`prog &`), the child holding its stdout and stderr, is
// done when the command exits: the request is answered while the child
// still runs, not when it closes the output it inherited.
func TestOnChangeChildDoesNotHold(t *testing.T) {
	root := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	c := startServer(t, &Server{Root: root, Command: []string{"sh", "-c", `sleep 600 & echo $! > "` + pidFile + `"; echo started`}})
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := Request{Module: "m", Files: []File{{Path: "/etc/x", Form: FormOwned, Content: []byte("x"), OnChange: OnChange{Action: OnChangeRestart, Unit: "x.service"}}}}
	resp, err := c.Fill(ctx, req)
	if err != nil {
		t.Fatalf("the fill waited for the command's child: %v", err)
	}
	if resp.Program == nil || resp.Program.Action != ProgramRestarted {
		t.Errorf("program %+v", resp.Program)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the child (pid %d) is not running after the fill: %v", pid, err)
	}
}

// TestProgramOutputIsBoundedHeadAndTail: a failing program that prints
// megabytes is said in its error by its head and its tail (where a
// program says why it failed), not held whole nor cut after its head.
func TestProgramOutputIsBoundedHeadAndTail(t *testing.T) {
	root := t.TempDir()
	script := `echo "first line"; head -c 4000000 /dev/zero | tr '\0' 'x'; echo; echo "unit $1 failed: the real reason" >&2; exit 3`
	c := startServer(t, &Server{Root: root, Command: []string{"sh", "-c", script}})
	req := Request{Module: "m", Files: []File{{Path: "/etc/x", Form: FormOwned, Content: []byte("x"), OnChange: OnChange{Action: OnChangeRestart, Unit: "x.service"}}}}
	_, err := c.Fill(t.Context(), req)
	if err == nil {
		t.Fatal("a failing command was not reported")
	}
	msg := err.Error()
	for _, want := range []string{"first line", "unit x.service failed: the real reason"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %q", want, msg)
		}
	}
	// whole, within what a report's reason keeps (report.MaxText): the
	// error is not cut again there
	if len(msg) > 512 {
		t.Errorf("error is %d bytes long, over a report's 512: %q", len(msg), msg)
	}
}
