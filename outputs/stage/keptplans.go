package stage

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/novox/mesh-provisioner/nodes"
)

// The bindings and offers of assignments whose value does not parse are
// kept in a file (Config.KeptPlans), written atomically whenever they move,
// so a client started again while a consumer's plan does not parse still
// lists the consumer in its provider's ${consumers:X}, and the provider's
// file and program stay as they are (nodes/keptplans.go says why here and
// not in the bucket's history). It holds names and offers, never a
// secret's value.

// keptPlansFile is the file's content.
type keptPlansFile struct {
	Plans map[string]nodes.KeptPlan `json:"plans"`
}

// loadKeptPlans reads Config.KeptPlans; a file missing is none, one
// unreadable is logged and taken as none.
func (s *Stage) loadKeptPlans() {
	if s.cfg.KeptPlans == "" {
		return
	}
	b, err := os.ReadFile(s.cfg.KeptPlans)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f keptPlansFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		s.cfg.Log.Warn().Err(err).Str("file", s.cfg.KeptPlans).
			Msg("kept bindings not read: a consumer whose plan does not parse is left out of its provider's consumers")
		return
	}
	s.keptBefore, s.keptSaved = f.Plans, b
}

// KeptPlansBefore is what Config.KeptPlans held at start
// (nodes.NodeGraph.PlansBefore). It is handed over once.
func (s *Stage) KeptPlansBefore() map[string]nodes.KeptPlan {
	k := s.keptBefore
	s.keptBefore = nil
	return k
}

// KeepPlans writes kept to Config.KeptPlans when it differs from what the
// file holds (no file when nothing is kept); a failure is logged (what is
// kept still holds while the client runs).
func (s *Stage) KeepPlans(kept map[string]nodes.KeptPlan) {
	if s.cfg.KeptPlans == "" {
		return
	}
	var b []byte
	if len(kept) > 0 {
		b, _ = json.Marshal(keptPlansFile{Plans: kept}) // map keys sorted: the same plans, the same bytes
	}
	if bytes.Equal(b, s.keptSaved) {
		return
	}
	var err error
	if b == nil {
		err = os.Remove(s.cfg.KeptPlans)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else if err = os.MkdirAll(filepath.Dir(s.cfg.KeptPlans), 0o700); err == nil {
		err = renameio.WriteFile(s.cfg.KeptPlans, b, 0o600)
	}
	if err != nil {
		s.cfg.Log.Warn().Err(err).Str("file", s.cfg.KeptPlans).
			Msg("kept bindings not saved: a restart forgets them")
		return
	}
	s.keptSaved = b
}
