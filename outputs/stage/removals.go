package stage

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"
)

// The removals the node-engine has not answered are kept in a file
// (Config.Removals), written atomically whenever the set changes, so a
// module that left while mesh-fill was down still loses its files after
// the client restarts: its removed report deleted the applied key, and
// nothing else remembers it.

// removalsFile is the file's content.
type removalsFile struct {
	Modules []string `json:"modules"`
}

// loadRemovals reads Config.Removals into s.removing; a file missing is
// none, one unreadable is logged and taken as none.
func (s *Stage) loadRemovals() {
	if s.cfg.Removals == "" {
		return
	}
	b, err := os.ReadFile(s.cfg.Removals)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f removalsFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		s.cfg.Log.Warn().Err(err).Str("file", s.cfg.Removals).Msg("pending removals not read: modules that left before the restart keep their files")
		return
	}
	for _, m := range f.Modules {
		s.removing[m] = true
	}
}

// saveRemovals writes s.removing to Config.Removals; a failure is logged
// (the removals are still tried while the client runs).
func (s *Stage) saveRemovals() {
	if s.cfg.Removals == "" {
		return
	}
	b, _ := json.Marshal(removalsFile{Modules: slices.Sorted(maps.Keys(s.removing))})
	err := os.MkdirAll(filepath.Dir(s.cfg.Removals), 0o700)
	if err == nil {
		err = renameio.WriteFile(s.cfg.Removals, b, 0o600)
	}
	if err != nil {
		s.cfg.Log.Warn().Err(err).Str("file", s.cfg.Removals).Msg("pending removals not saved: a restart forgets them")
	}
}
