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
// file holds (no file when nothing is kept). A write that fails (the state
// dir not writable for a moment) is logged and tried again at each retry
// tick (Retrying) until it is written: it was tried only when the kept set
// moved again, so a restart meanwhile forgot the bindings. What is kept
// still holds while the client runs.
func (s *Stage) KeepPlans(kept map[string]nodes.KeptPlan) {
	if s.cfg.KeptPlans == "" {
		return
	}
	var b []byte
	if len(kept) > 0 {
		b, _ = json.Marshal(keptPlansFile{Plans: kept}) // map keys sorted: the same plans, the same bytes
	}
	s.keptWant, s.keptUnsaved = b, !bytes.Equal(b, s.keptSaved)
	s.saveKeptPlans(false)
}

// saveKeptPlans writes what KeepPlans was last given, when the file does
// not hold it yet; again: a retry tick's (its failure is not logged again).
func (s *Stage) saveKeptPlans(again bool) {
	if !s.keptUnsaved {
		return
	}
	b := s.keptWant
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
		if !again {
			s.cfg.Log.Warn().Err(err).Str("file", s.cfg.KeptPlans).
				Msg("kept bindings not saved: trying again at each tick (a restart meanwhile forgets them)")
		}
		return
	}
	if again {
		s.cfg.Log.Info().Str("file", s.cfg.KeptPlans).Msg("kept bindings saved")
	}
	s.keptSaved, s.keptUnsaved = b, false
}
