package fill

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// TestAStateDirDeletedWhileServingIsMadeAgain: the state dir deleted
// while mesh-fill serves is made again (0700, locked) at the next
// request, which is answered; every module's state and pending file is
// written there from memory, and a warning says so. So a restart after
// still knows module b's file (its DELETE removes it). Before, every
// request was a 500 until mesh-fill was restarted, and the restart forgot
// every module.
func TestAStateDirDeletedWhileServingIsMadeAgain(t *testing.T) {
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	fails := []string{"sh", "-c", `test "$1" != b.service`} // b's restart fails: it stays pending
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state, Command: fails}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
	b := Request{Module: "b", Whole: true, Files: []File{{Path: "/etc/b.conf", Form: FormOwned, Content: []byte("b\n"),
		OnChange: OnChange{Action: OnChangeRestart, Unit: "b.service"}}}}
	if _, err := c.Fill(context.Background(), b); err == nil {
		t.Fatal("b's restart failed, but its fill said nothing")
	}

	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a2\n")}}})
	mustRead(t, filepath.Join(root, "etc/a.conf"), "a2\n")

	fi, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir made again with mode %04o, want 0700", fi.Mode().Perm())
	}
	if got := len(stateFiles(t, state)); got != 2 {
		t.Errorf("%d state files, want a's and b's", got)
	}
	if pend, _ := filepath.Glob(filepath.Join(state, "pending-*.json")); len(pend) != 1 {
		t.Errorf("pending files %v, want b's", pend)
	}
	var inUse *dirlock.InUseError
	if unlock, err := dirlock.Take(state, "test", ""); !errors.As(err, &inUse) {
		if err == nil {
			unlock()
		}
		t.Errorf("the state dir made again is not locked: %v", err)
	}
	var warned bool
	for _, line := range strings.Split(log.String(), "\n") {
		warned = warned || strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "state dir gone while mesh-fill ran: made again")
	}
	if !warned {
		t.Errorf("no warning of the state dir made again:\n%s", log)
	}
	stop()

	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state, Command: []string{"true"}}, log)
	if _, err := c.Delete(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, filepath.Join(root, "etc/b.conf"))
	mustRead(t, filepath.Join(root, "etc/a.conf"), "a2\n")
}

// TestAStateDirThatOnlyLooksAnotherIsKept: a state dir whose identity
// looks changed (as on a filesystem whose inode numbers change) but whose
// lock this process holds is the dir taken: the request is answered, and
// nothing is said of a state dir made again. Were it taken again, every
// request failed on the process's own lock.
func TestAStateDirThatOnlyLooksAnotherIsKept(t *testing.T) {
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	log := newLog(t)
	s := &Server{Root: root, StateDir: state}
	c, _ := runUntilStopped(t, s, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
	other, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.state.mu.Lock()
	s.state.taken = other
	s.state.mu.Unlock()
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a2\n")}}})
	if strings.Contains(log.String(), "made again") {
		t.Errorf("said the state dir was made again:\n%s", log)
	}
}
