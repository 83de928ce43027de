package fill

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestTheStateDirIsSyncedOnceItsFilesAreReplaced: a state file or a
// pending file renamed into the state dir (or removed from it) lasts a
// crash only once the directory itself is synced. mesh-fill syncs the
// state dir after each: a fill's pending file is in it, synced, before the
// request's files are renamed (else, after a crash, the files were new and
// their program never restarted), and the module's state file once they
// are (else the module's files were forgotten: another module could take
// them, and a whole request no longer naming one left it behind). Before,
// the state dir was never synced.
func TestTheStateDirIsSyncedOnceItsFilesAreReplaced(t *testing.T) {
	state := t.TempDir()
	root := t.TempDir()
	var mu sync.Mutex
	var synced [][]string // the state dir's files at each sync of it
	old := syncStateDir
	syncStateDir = func(dir string) error {
		if dir == state {
			names, _ := filepath.Glob(filepath.Join(dir, "*-*.json"))
			for i := range names {
				names[i] = filepath.Base(names[i])
			}
			mu.Lock()
			synced = append(synced, names)
			mu.Unlock()
		}
		return old(dir)
	}
	t.Cleanup(func() { syncStateDir = old })
	l := &ledger{dir: state}
	stateFile, pendingFile := filepath.Base(l.stateFile("m")), filepath.Base(l.pendingFile("m"))

	var atRename []string // the state dir's files synced when the request's file was renamed
	c := startServer(t, &Server{Root: root, StateDir: state, Command: []string{"true"},
		write: func(ds *dirs, steps []step) error {
			mu.Lock()
			if len(synced) > 0 {
				atRename = synced[len(synced)-1]
			}
			mu.Unlock()
			return writeAll(ds, steps, 0)
		}})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/a", Form: FormOwned, Content: []byte("a\n"),
		OnChange: OnChange{Action: OnChangeRestart, Unit: "a.service"}}}})
	mu.Lock()
	if !slices.Contains(atRename, pendingFile) {
		t.Errorf("the files were renamed with the state dir last synced holding %v; want its pending file %s in it", atRename, pendingFile)
	}
	if n := len(synced); n == 0 || !slices.Contains(synced[n-1], stateFile) || slices.Contains(synced[n-1], pendingFile) {
		t.Errorf("after the fill the state dir was last synced holding %v; want the state file %s and no pending file", synced, stateFile)
	}
	synced = nil
	mu.Unlock()

	if _, err := c.Delete(t.Context(), "m"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(synced); n == 0 || slices.Contains(synced[n-1], stateFile) {
		t.Errorf("after the DELETE the state dir was last synced holding %v; want no state file", synced)
	}
	if _, err := os.Stat(filepath.Join(state, stateFile)); !os.IsNotExist(err) {
		t.Errorf("state file left: %v", err)
	}
}
