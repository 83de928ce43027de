package fill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStaleStagedStateFilesAreRemovedAtStart: the temp files of state and
// pending files a mesh-fill stopped mid-write left in its state dir are
// removed when the next one starts; a file named otherwise is left, and
// the state it holds is read as before.
func TestStaleStagedStateFilesAreRemovedAtStart(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/a", Form: FormOwned, Content: []byte("a\n")}}})
	stop()

	digest := strings.Repeat("0123456789abcdef", 2)
	stale := []string{".module-" + digest + ".json5577006791947779410", ".pending-" + digest + ".json8674665223082153551"}
	kept := []string{".module-notes.json1", "module-" + digest + ".json.bak", ".pending-" + digest + ".json"}
	for _, name := range append(slices.Clone(stale), kept...) {
		writeFile(t, filepath.Join(state, name), `{"module":"x"}`)
	}
	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	for _, name := range stale {
		mustAbsent(t, filepath.Join(state, name))
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(state, name)); err != nil {
			t.Errorf("%s: %v; a file not named as a staged one is left", name, err)
		}
	}
	// m's state was read: a whole request naming nothing removes its file
	if _, err := c.Fill(t.Context(), Request{Module: "m", Whole: true}); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, filepath.Join(root, "a"))
	if !strings.Contains(log.String(), "stale temp file of a state file removed") {
		t.Errorf("the removal is not logged:\n%s", log)
	}
}
