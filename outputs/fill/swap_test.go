package fill

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// swapTree is a tree filled without --root, as on a real machine: u, a
// directory its user may write (a home), holding app, where a request may
// write (with other, a file beside it), and private, outside the
// allow-list, holding conf, a file the user is not to touch (made by root,
// say). swap, once armed, does what the user may as the server runs: moves
// app aside to moved and puts a symlink to private in its place (once).
// (The symlink stays inside u, where even a lookup confined to u would
// follow it: what refuses it is the check.)
func swapTree(t *testing.T) (s *Server, app, moved, private string, swap func(), armed *atomic.Bool) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := filepath.Join(dir, "home/u")
	app, moved, private = filepath.Join(u, "app"), filepath.Join(u, "moved"), filepath.Join(u, "private")
	writeFile(t, filepath.Join(private, "conf"), "private\n")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	armed = new(atomic.Bool)
	swapped := false
	swap = func() {
		if swapped || !armed.Load() {
			return
		}
		swapped = true
		if err := os.Rename(app, moved); err != nil {
			t.Error(err)
		}
		if err := os.Symlink("private", app); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		if !swapped {
			t.Error("the directory was never swapped")
		}
	})
	return &Server{Allow: []string{app + "/**", filepath.Join(u, "other")}}, app, moved, private, swap, armed
}

// swapWhenOpened swaps when app is opened, between its look and its open.
func swapWhenOpened(t *testing.T, app string, swap func()) {
	beforeOpen = func(dir string) {
		if "/"+dir == app {
			swap()
		}
	}
	t.Cleanup(func() { beforeOpen = nil })
}

// swapBeforeWriting swaps once the request is planned (its files checked),
// before anything is written or removed.
func swapBeforeWriting(s *Server, swap func()) {
	s.write = func(ds *dirs, steps []step) error {
		swap()
		return writeAll(ds, steps, DefaultSyncFSFrom)
	}
}

// mustHoldOnly fails the test unless dir holds the file conf, its bytes
// want, and nothing else (no temp file).
func mustHoldOnly(t *testing.T, dir, want string) {
	t.Helper()
	mustRead(t, filepath.Join(dir, "conf"), want)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%s holds %v, want conf alone", dir, entries)
	}
}

// TestAParentSwappedForASymlinkIsNotWrittenThrough: one who may write a
// parent directory of a path may swap it for a symlink to anywhere while
// the server runs. As the server opens it (between its look and its open)
// the request is refused; after the request is checked and before it is
// written, the file is written in the directory checked (moved aside),
// never looked up again. Either way nothing is written where the symlink
// leads (outside the allow-list) and the file there is as it was.
func TestAParentSwappedForASymlinkIsNotWrittenThrough(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opened bool
	}{
		{"as it is opened", true},
		{"after the check", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, app, moved, private, swap, armed := swapTree(t)
			armed.Store(true)
			if tc.opened {
				swapWhenOpened(t, app, swap)
			} else {
				swapBeforeWriting(s, swap)
			}
			c := startServer(t, s)
			req := Request{Module: "m", Files: []File{
				{Path: filepath.Join(app, "conf"), Form: FormOwned, Content: []byte("the module's\n")},
			}}
			if tc.opened {
				_, err := c.Fill(t.Context(), req)
				wantStatus(t, err, http.StatusBadRequest, `"`+filepath.Join(app, "conf")+`"`, "parent directory "+app, "changed while being opened")
			} else {
				fillOK(t, c, req)
				mustHoldOnly(t, moved, "the module's\n")
			}
			mustHoldOnly(t, private, "private\n")
		})
	}
}

// TestARemovalIsNotMadeThroughASwappedParent: the owned file a module no
// longer holds is removed in the directory checked, or not at all: with
// its parent swapped for a symlink as it is opened (DELETE), the file is
// left (and logged); swapped after the check and before the removal (a
// whole request), the file checked is removed, in the directory moved
// aside. The file where the symlink leads is as it was.
func TestARemovalIsNotMadeThroughASwappedParent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opened bool
	}{
		{"DELETE, as it is opened", true},
		{"whole request, after the check", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, app, moved, private, swap, armed := swapTree(t)
			if tc.opened {
				swapWhenOpened(t, app, swap)
			} else {
				swapBeforeWriting(s, swap)
			}
			c := startServer(t, s)
			other := File{Path: filepath.Join(filepath.Dir(app), "other"), Form: FormOwned, Content: []byte("other\n")}
			fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
				{Path: filepath.Join(app, "conf"), Form: FormOwned, Content: []byte("the module's\n")}, other,
			}})

			armed.Store(true)
			var files []FileResult
			var err error
			if tc.opened {
				files, err = c.Delete(t.Context(), "m")
			} else {
				var resp Response
				resp, err = c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{other}})
				files = resp.Files
			}
			if err != nil {
				t.Fatal(err)
			}
			mustHoldOnly(t, private, "private\n")
			removed := slices.ContainsFunc(files, func(f FileResult) bool { return f.Path == filepath.Join(app, "conf") })
			if tc.opened {
				if removed {
					t.Errorf("answered removed: %+v", files)
				}
				mustHoldOnly(t, moved, "the module's\n")
			} else {
				if !removed {
					t.Errorf("not answered removed: %+v", files)
				}
				mustAbsent(t, filepath.Join(moved, "conf"))
			}
		})
	}
}

// TestAFileSwappedForASymlinkIsNotRead: a file swapped for a symlink (to
// a file of root's beside it) between the look at it and its reading is
// refused, not read into the file written: a managed-block file keeps what
// is there, so reading the other file would write it out to the user.
func TestAFileSwappedForASymlinkIsNotRead(t *testing.T) {
	app, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	conf, secret := filepath.Join(app, "conf"), filepath.Join(app, "secret")
	writeFile(t, conf, "the user's\n")
	if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	swapped := false
	beforeOpen = func(p string) {
		if "/"+p == conf && !swapped {
			swapped = true
			if err := os.Remove(conf); err != nil {
				t.Error(err)
			}
			if err := os.Symlink("secret", conf); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { beforeOpen = nil })
	c := startServer(t, &Server{Allow: []string{conf}})
	_, err = c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: conf, Form: FormManagedBlock, Content: []byte("m's line\n")}}})
	wantStatus(t, err, http.StatusBadRequest, `"`+conf+`" changed while being read`)
	if !swapped {
		t.Fatal("the file was never swapped")
	}
	mustRead(t, secret, "root's secret\n")
	if fi, err := os.Lstat(conf); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s was written over: %v, %v", conf, fi, err)
	}
}

// TestAParentSwappedForAnotherDirectoryAfterTheCheckIsNotWrittenInto: a
// file is written in the directory its request was checked and read in.
// One who may write u may, once the request is checked, move app aside and
// rename private (a directory of root's beside it) to app: had the write
// looked app up again, it would put the module's block, merged with what
// the user's file held, over root's file there.
func TestAParentSwappedForAnotherDirectoryAfterTheCheckIsNotWrittenInto(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := filepath.Join(dir, "home/u")
	app, moved, private := filepath.Join(u, "app"), filepath.Join(u, "moved"), filepath.Join(u, "private")
	writeFile(t, filepath.Join(private, "conf"), "private\n")
	writeFile(t, filepath.Join(app, "conf"), "the user's\n")
	s := &Server{Allow: []string{app + "/**"}}
	var swapped atomic.Bool
	swapBeforeWriting(s, func() {
		swapped.Store(true)
		if err := os.Rename(app, moved); err != nil {
			t.Error(err)
		}
		if err := os.Rename(private, app); err != nil {
			t.Error(err)
		}
	})
	c := startServer(t, s)

	resp := fillOK(t, c, Request{Module: "m", Files: []File{
		{Path: filepath.Join(app, "conf"), Form: FormManagedBlock, Content: []byte("the module's\n")},
	}})
	if !swapped.Load() {
		t.Fatal("the directory was never swapped")
	}
	if got := resp.Files[0].Action; got != ActionMerged {
		t.Errorf("answered %s, want %s", got, ActionMerged)
	}
	mustHoldOnly(t, app, "private\n")
	mustHoldOnly(t, moved, "the user's\n# BEGIN mesh m\nthe module's\n# END mesh m\n")
}
