package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesWrittenWhenTheStateCouldNotBeSavedStayTheModules: a request
// whose files were written but whose state file could not be saved after
// their renames (a full disk, an I/O error; it was saved before them,
// TestAFileWrittenWhileTheStateCannotBeSavedIsRemovedAfterARestart) fails
// (500), yet the files it wrote stay its module's: another module is refused them (409), and the module's
// DELETE, once the state dir is writable again, removes them too. Before,
// they were forgotten: any module could take them, and nothing removed
// them.
func TestFilesWrittenWhenTheStateCouldNotBeSavedStayTheModules(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	s := &Server{Root: root, StateDir: state}
	var spoil func()
	s.write = func(ds *dirs, steps []step) error {
		err := writeAll(ds, steps, DefaultSyncFSFrom)
		if spoil != nil {
			spoil()
		}
		return err
	}
	c := startServer(t, s)
	a := File{Path: "/etc/m/a.conf", Form: FormOwned, Content: []byte("a\n")}
	b := File{Path: "/etc/m/b.conf", Form: FormOwned, Content: []byte("b\n")}
	old := File{Path: "/etc/m/old.conf", Form: FormOwned, Content: []byte("old\n")}
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{a, old}})

	// once the request's files are in place, the state file cannot be
	// replaced: a directory stands at its path (the request's new file
	// was saved before; the declaration that lets old.conf go is not)
	sf := filepath.Join(state, "module-"+moduleDigest("m")+".json")
	spoil = func() {
		spoil = nil
		if err := os.Remove(sf); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(sf, 0o700); err != nil {
			t.Error(err)
		}
	}
	_, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{a, b}})
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Status != http.StatusInternalServerError {
		t.Fatalf("a request whose state was not saved: %v, want a 500", err)
	}
	mustRead(t, filepath.Join(root, "etc/m/b.conf"), "b\n")
	mustAbsent(t, filepath.Join(root, "etc/m/old.conf"))

	_, err = c.Fill(t.Context(), Request{Module: "n", Files: []File{{Path: b.Path, Form: FormOwned, Content: []byte("n's\n")}}})
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Status != http.StatusConflict {
		t.Errorf("another module writing m's unsaved file: %v, want a 409", err)
	}
	mustRead(t, filepath.Join(root, "etc/m/b.conf"), "b\n")

	if err := os.Remove(sf); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(t.Context(), "m"); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, filepath.Join(root, "etc/m/a.conf"))
	mustAbsent(t, filepath.Join(root, "etc/m/b.conf"))
}
