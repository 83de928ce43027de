package stage

import (
	"errors"
	"net/http"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// A module may take over a path of a module that left this node: its
// fill and the leaver's DELETE (SPEC §4.7) go at the same moment, each
// off the loop, and a node-engine that takes the fill first refuses it
// with a 409 naming the leaver, whose declaration it still holds. That
// refusal is the client's own race, not the module's failure: the first
// one from a holder that is not one of the node's modules is not taken
// in (no failed report, event or log line) and the request goes again
// once the holder's DELETE is answered (at once when it already was).
// A second refusal from the same holder is a failure, as any 409.

// handover says j's fill was refused (a 409) for a path held by a module
// that is not on this node, for the first time in a row from it: the
// holder, and whether it is so.
func (s *Stage) handover(j *outJob) (holder string, ok bool) {
	se, isSE := errors.AsType[*fill.StatusError](j.err)
	if !isSE || se.Status != http.StatusConflict || se.Holder == "" || se.Holder == j.v.Name || j.sent[se.Held] == nil {
		return "", false
	}
	if s.modules[se.Holder] != nil || s.modules[j.v.Name] != j.mo {
		return "", false // a module here holds it: the clash is real
	}
	if r := j.mo.refused; r != nil && r.holder == se.Holder {
		return "", false // said once already: a failure
	}
	return se.Holder, true
}

// handOver takes in j's refusal that handover let through: kept as a
// refusal naming holder (heardAnswer sends the request again once the
// holder's DELETE is answered), sent again at once when that DELETE was
// answered already; it says whether the request is to go again now.
func (s *Stage) handOver(j *outJob, holder string) (again bool) {
	s.heardAnswer(j.v.Name, j, j.err)
	s.cfg.Log.Debug().Str("module", j.v.Name).Str("holder", holder).
		Msg("a path is still held by a module that left this node: the fill goes again once its removal is answered")
	if r := j.mo.refused; r != nil && !s.removing[holder] {
		r.until = s.now()
		return true
	}
	return false
}
