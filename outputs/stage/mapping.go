package stage

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// fillRequest holds the module's changed files, once every file of it is
// ready; nil when there is nothing to send. With all, or when the plan
// changed since the module's last whole request was answered, it holds
// every file and says whole (SPEC §4.3 (r2)): the node-engine then removes
// what the module no longer names, even when that leaves no file at all.
// A file's bytes are taken from its value (nodes.FileValue.Take): those
// its render left there, or else rendered again and checked against its
// sum. A file whose bytes cannot be had so fails the request: its error
// says which file, never its bytes, and nothing of the module is sent.
func fillRequest(v *nodes.ModuleView, mo *moduleOut, all bool) (*fill.Request, map[string]*nodes.FileValue, error) {
	whole, files, ok := toFill(v, mo, all)
	if !ok {
		return nil, nil, nil
	}
	req := &fill.Request{Module: v.Name, Whole: whole}
	sent := make(map[string]*nodes.FileValue, len(files))
	for _, i := range files {
		f := &v.Files[i]
		content, err := f.Value.Take()
		if err != nil {
			return nil, nil, err
		}
		sent[f.Path] = f.Value
		s := f.Value.Spec
		req.Files = append(req.Files, fill.File{Path: s.Path, Form: s.Form, Content: content,
			Owner: s.Owner, Group: s.Group, Mode: s.Mode,
			OnChange: fill.OnChange{Action: s.OnChange.Action, Unit: s.OnChange.Unit}})
	}
	return req, sent, nil
}

// toFill is what a fill request of the module would hold: whether it is
// whole and which of the view's files (their indexes) it carries; ok is
// false when there is none to send (fillRequest).
func toFill(v *nodes.ModuleView, mo *moduleOut, all bool) (whole bool, files []int, ok bool) {
	for _, f := range v.Files {
		if f.State != graph.Ready {
			return false, nil, false // nothing of a module is written until every file is there
		}
	}
	whole = all || v.Plan != mo.declared || len(mo.heldElsewhere) > 0
	for i, f := range v.Files {
		if mo.heldElsewhere[f.Path] {
			continue // let go of first by the module holding it (moduleOut.heldElsewhere)
		}
		if whole || mo.filled[f.Path] != f.Value {
			files = append(files, i)
		}
	}
	if len(files) == 0 && len(mo.heldElsewhere) == 0 && !(whole && v.State == graph.Ready && mo.declared != v.Plan) {
		// No file: a ready plan of none says so once (a whole request of
		// none), so files it named before, in this run or before a restart
		// of the client, are removed; after that it sends nothing.
		return false, nil, false
	}
	return whole, files, true
}

// secretDigest keys the digest of the secret-bearing file at path with a
// key kept in memory (ReportKey), so no report is an oracle for a secret.
// The path is keyed too: one value in two files reads as two digests, so
// no report says which of a node's files hold the same secret, and no
// file whose bytes a reader can choose (a vault entry of theirs) is an
// oracle for another's (an outside audit). Every module sharing a file
// still reports the one digest of it.
func secretDigest(key []byte, path string, content []byte) string {
	h := hmac.New(sha256.New, key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(path)))
	h.Write(n[:])
	h.Write([]byte(path))
	h.Write(content)
	return keyedPrefix + hex.EncodeToString(h.Sum(nil))
}

// keyedPrefix begins a keyed digest (secretDigest).
const keyedPrefix = "hmac-sha256:"

// reportOf is the report a module's view and its last fill make.
func reportOf(v *nodes.ModuleView, mo *moduleOut) report.Report {
	r := report.Report{Module: v.Name}
	switch {
	case v.State == graph.Failed:
		r.State, r.Reason, r.Waiting = "failed", v.Reason, StillWaiting(v)
	case mo.itemFail != "":
		r.State, r.Reason, r.Waiting = "failed", mo.itemFail, StillWaiting(v)
	case v.State == graph.Waiting:
		r.State = "waiting"
		r.Waiting = WaitingOf(v)
	case mo.failure != "":
		r.State, r.Reason = "failed", mo.failure
	default:
		r.State = "applied"
	}
	if len(v.Files) > 0 {
		r.Files = make([]report.File, 0, len(v.Files))
	}
	for _, f := range v.Files {
		if rf, ok := mo.files[f.Path]; ok {
			r.Files = append(r.Files, rf)
		}
	}
	return r
}

// WaitingOf is what a waiting module waits for, as its report says it:
// its needs not met, or the module itself (a plan or archive) when every
// need is. /v1/modules says the same (outputs/control).
func WaitingOf(v *nodes.ModuleView) []report.Waiting {
	out := StillWaiting(v)
	if len(out) == 0 {
		out = append(out, report.Waiting{Kind: "module", Name: v.Name, Why: v.Reason})
	}
	return out
}

// StillWaiting is what a failed module waits for besides what fails it
// (its reason): its needs not met and not failed, each as a waiting
// report lists it. A module that fails waits for nothing else when every
// other need is met, and says none of itself ("module"): its reason says
// why it fails. An operator who fixes what fails it knows from the same
// report whether it will still wait, and for what.
func StillWaiting(v *nodes.ModuleView) []report.Waiting {
	var out []report.Waiting
	for _, n := range v.Needs {
		if n.State == graph.Waiting {
			out = append(out, report.Waiting{Kind: n.Kind, Name: n.Name, Why: n.Why})
		}
	}
	return out
}

// needsOf is the needs a module's view says, for node's needs bucket.
func needsOf(node, module string, needs []nodes.NeedView) []report.Need {
	return appendNeeds(make([]report.Need, 0, len(needs)), node, module, needs)
}

// appendNeeds appends to out the needs a module's view says, but the
// secrets it declares that no template names (no placeholder, no need).
func appendNeeds(out []report.Need, node, module string, needs []nodes.NeedView) []report.Need {
	for _, n := range needs {
		if n.Declared {
			continue
		}
		st := "met"
		switch n.State {
		case graph.Waiting:
			st = "waiting"
		case graph.Failed:
			st = "failed"
		}
		out = append(out, report.Need{Node: node, Module: module, Kind: n.Kind, Name: n.Name, State: st, Why: n.Why})
	}
	return out
}
