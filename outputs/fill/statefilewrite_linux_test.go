package fill

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStateFilesAreNotStagedInTMPDIR: a fill's state and pending files
// are staged in the state dir itself. Before, renameio staged them in
// $TMPDIR (/tmp, which every user may write) and renamed them in: root
// made files there, and a crash left them where no sweep looks. Every
// file made in TMPDIR during the fill is seen (inotify), renamed away or
// not.
func TestStateFilesAreNotStagedInTMPDIR(t *testing.T) {
	tmp := t.TempDir()
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	c := startServer(t, &Server{Root: root, StateDir: state, Command: []string{"true"}})

	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, tmp, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	// a state file and a pending file written, the pending one cleared
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n"),
		OnChange: OnChange{Action: OnChangeRestart, Unit: "a.service"}}}})
	mustRead(t, filepath.Join(root, "etc/a.conf"), "a\n")

	var made []string
	buf := make([]byte, 64<<10)
	n, _ := unix.Read(fd, buf) // EAGAIN: nothing made
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
		made = append(made, string(name[:clen(name)]))
		off += unix.SizeofInotifyEvent + int(ev.Len)
	}
	if len(made) > 0 {
		t.Errorf("files made in TMPDIR during the fill: %q", made)
	}
}

// clen is the length of the NUL-terminated name in b.
func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}
