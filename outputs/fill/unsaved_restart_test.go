package fill

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAFileWrittenWhileTheStateCannotBeSavedIsRemovedAfterARestart: a
// file a request writes is the module's in the state dir before it is in
// place, so that when the state dir turns unwritable (read-only here),
// and mesh-fill is restarted before a save holds again, the module's next
// whole request that no longer names the file still removes it. When the
// state dir cannot be written before the request's renames, the request
// writes nothing (500, tried again by the client); when it turns
// unwritable after them, a whole request letting go of a file (whose
// declaration is saved after its renames) fails after writing (500), and
// its new file is the module's on disk already. Before, the file was the
// module's in memory alone: restarted, mesh-fill forgot it, and it was
// nobody's, never removed.
func TestAFileWrittenWhileTheStateCannotBeSavedIsRemovedAfterARestart(t *testing.T) {
	a := File{Path: "/etc/m/a.conf", Form: FormOwned, Content: []byte("a\n")}
	b := File{Path: "/etc/m/b.conf", Form: FormOwned, Content: []byte("b\n")}
	old := File{Path: "/etc/m/old.conf", Form: FormOwned, Content: []byte("old\n")}
	for _, when := range []string{"before the request", "after its renames"} {
		t.Run(when, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			readOnly := func() error { // the state dir mounted read-only on itself
				if err := unix.Mount(state, state, "", unix.MS_BIND, ""); err != nil {
					return err
				}
				if err := unix.Mount("", state, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
					unix.Unmount(state, unix.MNT_DETACH)
					return err
				}
				return nil
			}
			writable := func() { unix.Unmount(state, unix.MNT_DETACH) }
			if err := readOnly(); err != nil {
				t.Skipf("cannot mount the state dir read-only here: %v", err)
			}
			writable()
			t.Cleanup(writable)

			s := &Server{Root: root, StateDir: state}
			var turn bool
			s.write = func(ds *dirs, steps []step) error {
				err := writeAll(ds, steps, DefaultSyncFSFrom)
				if turn {
					if err := readOnly(); err != nil {
						t.Error(err)
					}
				}
				return err
			}
			c, stop := runUntilStopped(t, s, newLog(t))
			fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{a, old}})
			if when == "before the request" {
				if err := readOnly(); err != nil {
					t.Fatal(err)
				}
			} else {
				turn = true
			}
			_, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{a, b}})
			if se, ok := errors.AsType[*StatusError](err); !ok || se.Status != http.StatusInternalServerError {
				t.Fatalf("a request whose state could not be saved: %v, want a 500", err)
			}
			if when == "before the request" {
				wantStatus(t, err, http.StatusInternalServerError, "nothing written", "read-only")
				mustAbsent(t, filepath.Join(root, "etc/m/b.conf"))
			} else {
				wantStatus(t, err, http.StatusInternalServerError, "files filled, but")
				mustRead(t, filepath.Join(root, "etc/m/b.conf"), "b\n")
			}
			stop()
			writable()

			c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, newLog(t))
			resp, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{a}})
			if err != nil {
				t.Fatal(err)
			}
			mustAbsent(t, filepath.Join(root, "etc/m/b.conf"))
			mustAbsent(t, filepath.Join(root, "etc/m/old.conf"))
			mustRead(t, filepath.Join(root, "etc/m/a.conf"), "a\n")
			removed := slices.ContainsFunc(resp.Files, func(f FileResult) bool { return f.Path == b.Path && f.Action == ActionRemoved })
			if wrote := when != "before the request"; removed != wrote {
				t.Errorf("the whole request's answer %+v: %s said removed: %v, want %v", resp.Files, b.Path, removed, wrote)
			}
		})
	}
}
