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

// saveRemovals writes s.removing to Config.Removals. A failure is logged
// and the write tried again at each retry tick (Retrying) until it holds;
// the removals are still tried while the client runs.
func (s *Stage) saveRemovals() { s.writeRemovals(false) }

// writeRemovals is saveRemovals; again: a retry tick's (its failure is
// not logged again).
func (s *Stage) writeRemovals(again bool) {
	if s.cfg.Removals == "" {
		return
	}
	s.removalsOld = true
	b, _ := json.Marshal(removalsFile{Modules: slices.Sorted(maps.Keys(s.removing))})
	err := os.MkdirAll(filepath.Dir(s.cfg.Removals), 0o700)
	if err == nil {
		err = renameio.WriteFile(s.cfg.Removals, b, 0o600)
	}
	if err != nil {
		if !again {
			s.cfg.Log.Warn().Err(err).Str("file", s.cfg.Removals).Msg("pending removals not saved: trying again at each tick (a restart meanwhile forgets them)")
		}
		return
	}
	if again {
		s.cfg.Log.Info().Str("file", s.cfg.Removals).Msg("pending removals saved")
	}
	s.removalsOld = false
}
