package fill

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAStateDirOthersMayWriteStopsTheStart: a state dir writable by
// others (or another user's) is not trusted: a state file planted there
// would have mesh-fill remove a file it never wrote, at the module's next
// whole request. Before, mesh-fill started and removed it.
func TestAStateDirOthersMayWriteStopsTheStart(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "victim"), "not the module's\n")
	planted := `{"module":"a","files":{"/victim":{"path":"/victim","form":"owned"}}}`
	if err := os.WriteFile((&ledger{dir: state}).stateFile("a"), []byte(planted), 0o666); err != nil {
		t.Fatal(err)
	}
	err := startRefused(t, &Server{Root: root, StateDir: state})
	wantSaid(t, err, "state dir "+state+" is owned by uid", "mode 0777")
	mustRead(t, filepath.Join(root, "victim"), "not the module's\n")
}
