package fill

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestARequestThatMovesNoPathLeavesTheStateFileAlone: a module's state
// file is written when what it holds changes (SPEC §4.3 (r2): paths,
// forms, managed keys), not at every request. A refill, or a change of a
// file's bytes alone, holds the same paths: writing the state file again
// was a rename and two fsyncs per request on the path of every change.
func TestARequestThatMovesNoPathLeavesTheStateFileAlone(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	c, _ := runUntilStopped(t, &Server{Root: root, StateDir: state}, newLog(t))
	sf := (&ledger{dir: state}).stateFile("m")
	// A hard link outside the state dir keeps the file it names alive: a
	// state file written again (renamed over) is another inode than it,
	// and its inode number cannot be the old one's reused.
	kept := filepath.Join(t.TempDir(), "kept")
	ino := func(p string) uint64 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return st.Ino
	}
	same := func() bool { return ino(sf) == ino(kept) }
	keep := func() {
		t.Helper()
		os.Remove(kept)
		if err := os.Link(sf, kept); err != nil {
			t.Skipf("no hard link from the state dir to a temp dir here: %v", err)
		}
	}
	one := func(body string) Request {
		return Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/m.conf", Form: FormOwned, Content: []byte(body)}}}
	}
	fillOK(t, c, one("a\n"))
	keep()
	fillOK(t, c, one("a\n"))                                                                                          // a refill
	fillOK(t, c, one("b\n"))                                                                                          // bytes alone
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("c\n")}}}) // changed files alone
	if !same() {
		t.Errorf("the state file was written again by requests that moved no path")
	}
	mustRead(t, root+"/etc/m.conf", "c\n")

	// a path added or dropped is written
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
		{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("c\n")},
		{Path: "/etc/m2.conf", Form: FormOwned, Content: []byte("2\n")},
	}})
	if same() {
		t.Errorf("a path added left the state file as it was")
	}
	keep()
	if _, err := c.Fill(t.Context(), one("c\n")); err != nil {
		t.Fatalf("Fill: %v", err)
	}
	if same() {
		t.Errorf("a path dropped left the state file as it was")
	}
	if _, err := os.Stat(root + "/etc/m2.conf"); !os.IsNotExist(err) {
		t.Errorf("/etc/m2.conf after the whole request that dropped it: %v", err)
	}
}
