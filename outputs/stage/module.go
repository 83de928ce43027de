package stage

import (
	"bytes"
	"errors"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// moduleOut is what the stage last filled and said of a module.
type moduleOut struct {
	filled map[string]*nodes.FileValue // path → the value last filled (the engine keeps an equal value's pointer)
	files  map[string]report.File      // path → what the report says of it
	// before: path → what the last run's report (the bucket's, read by the
	// start's Sweep) said of a file this run has not filled yet. A fill
	// that finds the file unchanged keeps that entry, so a restart that
	// changed nothing puts no report again (SPEC §5.3), as a refill tick
	// does not; dropped once a fill is answered.
	before map[string]report.File
	items  map[string][]byte // collection → text last recorded
	// itemsDirty: items changed (or the publisher forgot them) since they
	// were last recorded; a module's items are handed to the publisher
	// only then (issue 20: they were encoded each change only to be found
	// unchanged).
	itemsDirty bool
	// needsQueued is the sum of the needs last queued for the bus
	// (nodes.SumNeeds), needsWritten of those last written; needs whose sum is
	// the one written are not queued again (issue 20: each change summed
	// every need of its module in the publisher only to find them the
	// same). needsKnown: needsWritten holds.
	needsQueued, needsWritten uint64
	needsKnown                bool
	state                     string
	loggedReason              string    // the reason of the report last logged (statelog.go)
	loggedWaits               uint64    // what the waiting report last logged waits for, kinds and names (statelog.go)
	failure                   string    // the fill socket's failure, until a fill succeeds
	failedAt                  time.Time // when failure began: moved when its text changes (fail)
	itemFail                  string    // an item the bus cannot hold (report.TooLargeError), until the items are recorded
	declared                  string    // the plan (ModuleView.Plan) of the last whole request answered; "" before one
	retry                     bool      // a write or fill failed: try again at the next retry tick
	// resend: a whole request (a full send's: start, reconnect, refill
	// tick; or a plan's change) failed for want of an answer or with a
	// 5xx: the retry sends every file again, whole. Sending only the
	// files whose value moved since the last fill answered sent nothing
	// when none had (a reconnect's refill carries no new value): the
	// module stayed failed "not answering" once the node-engine was back,
	// and a file changed on disk stayed so, until the refill tick. A 4xx
	// is left to the refusal's own wait (refused.go), and so is a failed
	// program's 5xx.
	resend      bool
	refused     *refusal // its last request, refused with a 4xx or its program failed: sent again unchanged only after a wait (refused.go)
	refusedWait bool     // its request is the one refused last, held for its wait (refusedHeld): sent once it passed (refusalDue)
	// heldElsewhere: paths the node-engine refused (409) in the module's
	// last whole request because another module's declaration holds them.
	// The next whole request leaves them out, so that what the module
	// still holds and no longer names is let go; the one after names them
	// again. Two modules swapping paths each wait for the other's old
	// declaration to go: without this step neither ever would.
	heldElsewhere map[string]bool
	since         time.Time
	// sinceBefore: when the state of the last run's report (read back by
	// the start's Sweep) was written, its "at"; this run's first report,
	// equal to it and so not put again, says the module is in that state
	// since then (reported), as the bucket does.
	sinceBefore time.Time
	lastFill    time.Time // when its last fill request was sent (Config.FillGap)

	// planFailed, planNamed: the needs written failed while the module
	// failed at plan level (ModuleView.FailedNeeds, queueFailed) and the
	// placeholders its templates named then, until its needs are known
	// and written again: the same are not written again.
	planFailed []nodes.NeedView
	planNamed  map[nodes.Placeholder]bool
}

// takeBefore keeps files, the last run's report's, as before when this
// run has said nothing of the module's files yet.
func (mo *moduleOut) takeBefore(files []report.File) {
	if len(mo.files) > 0 {
		return
	}
	mo.before = make(map[string]report.File, len(files))
	for _, f := range files {
		if f.Action != fill.ActionRemoved {
			mo.before[f.Path] = f
		}
	}
}

// fail says the fill socket's failure msg (Said; "": a fill succeeded):
// it began at now, unless it is the failure already said.
func (mo *moduleOut) fail(msg string, now time.Time) {
	switch {
	case msg == "":
		mo.failedAt = time.Time{}
	case msg != mo.failure:
		mo.failedAt = now
	}
	mo.failure = msg
}

func newModuleOut() *moduleOut {
	return &moduleOut{filled: map[string]*nodes.FileValue{}, files: map[string]report.File{}, items: map[string][]byte{}, itemsDirty: true}
}

// takeItems brings the items recorded in line with the view's: a ready
// item's text is recorded, a failed one is not, a waiting one keeps what is
// recorded (nil, keep the bucket's, when nothing is), one gone is dropped.
// Any of these that moves something marks the items dirty.
func (mo *moduleOut) takeItems(v *nodes.ModuleView) {
	for _, it := range v.Items {
		switch old, known := mo.items[it.Collection]; {
		case it.State == graph.Ready:
			if !known || old == nil || !bytes.Equal(old, it.Text) {
				mo.itemsDirty = true
			}
			mo.items[it.Collection] = it.Text
		case it.State == graph.Failed:
			if known {
				mo.itemsDirty = true
			}
			delete(mo.items, it.Collection) // a failed item is not recorded
		case !known:
			mo.itemsDirty = true
			mo.items[it.Collection] = nil // waiting, no text in this run yet: keep what is recorded
		}
	}
	for c := range mo.items {
		if !hasItem(v, c) {
			mo.itemsDirty = true
			delete(mo.items, c)
		}
	}
}

func hasItem(v *nodes.ModuleView, c string) bool {
	for _, it := range v.Items {
		if it.Collection == c {
			return true
		}
	}
	return false
}

// shared says whether a file of form may be shared with other modules
// (SPEC §4.3): managed-block and managed-keys.
func shared(form string) bool { return form == nodes.FormManagedBlock || form == nodes.FormManagedKeys }

// takeFill takes in the fill socket's answer to req, which carried sent
// (path → value): the values are recorded as filled and the files'
// actions and digests as what the report says; a secret-bearing file's
// digest is keyed with key. A failed fill is recorded as the failure
// (fillFailure: never the node-engine's text when req carried a secret
// or the text quotes one, quotes saying so).
// A whole request answered is the module's declaration: what it did not
// name is no longer filled. A file the node-engine removed is not in the
// report (SPEC §5.3's actions are written, unchanged, kept and merged,
// each with a digest): the stage logs it (Land).
func (mo *moduleOut) takeFill(v *nodes.ModuleView, req *fill.Request, sent map[string]*nodes.FileValue, resp fill.Response, err error, key []byte, quotes func(string) bool) {
	if err != nil {
		mo.fail(fillFailure(err, req, carriesSecret(sent), quotes), time.Now())
		mo.retry = true
		mo.resend = mo.resend || req.Whole && !permanent(err)
		var se *fill.StatusError
		// A key's 409 (HeldKey) leaves its shared path in: leaving it out
		// would let go of nothing held elsewhere.
		if req.Whole && errors.As(err, &se) && se.Held != "" && se.HeldKey == "" && sent[se.Held] != nil {
			if mo.heldElsewhere == nil {
				mo.heldElsewhere = map[string]bool{}
			}
			mo.heldElsewhere[se.Held] = true
		}
		return
	}
	if len(mo.heldElsewhere) > 0 {
		// A whole request without the paths held elsewhere landed: the
		// module let go of what it no longer names. Its files are not all
		// there yet: the failure stays said until the next request, with
		// those paths again, lands.
		clear(mo.heldElsewhere)
		mo.retry = true
	} else {
		mo.fail("", time.Time{})
	}
	if req.Whole {
		// The node-engine now holds what this request named and nothing
		// else of the module: files no longer named are forgotten.
		mo.declared = v.Plan
		mo.resend = false
		clear(mo.filled)
	}
	for p, fv := range sent {
		mo.filled[p] = fv
	}
	var sentBytes map[string][]byte // a secret-bearing file's bytes, as the request carried them
	for _, r := range resp.Files {
		// A secret-bearing file's digest is keyed: the request carried
		// its value (the node-engine answers for the files it was sent,
		// and those a whole request removes, which carry no value).
		fv := sent[r.Path]
		switch {
		case fv != nil && fv.Secret && r.Action == fill.ActionKept:
			// A seed kept: the bytes sent are on no disk (a rotated
			// secret's). Held, its entry's digest is still of what is
			// there; else the node-engine's digest of it, keyed.
			if _, had := mo.files[r.Path]; had {
				continue
			}
			r.Digest = secretDigest(key, fv.Spec.Path, []byte(r.Digest))
		case fv != nil && shared(fv.Spec.Form):
			// The node-engine's digest is of the whole file, which other
			// modules' blocks or keys share and may hold their secrets:
			// keyed, so no report is an oracle for one. A block or keys
			// holding this module's secret too: the digest is of the
			// file on disk, as every module sharing it reports it, not
			// of the block or keys sent, which moved only with them.
			r.Digest = secretDigest(key, fv.Spec.Path, []byte(r.Digest))
		case fv != nil && fv.Secret:
			// Keyed from the bytes sent: the value no longer holds them,
			// and its node may have moved on since.
			if sentBytes == nil {
				sentBytes = make(map[string][]byte, len(req.Files))
				for _, f := range req.Files {
					sentBytes[f.Path] = f.Content
				}
			}
			r.Digest = secretDigest(key, fv.Spec.Path, sentBytes[r.Path])
		case fv != nil && r.Action == fill.ActionKept && r.Digest != fv.Digest():
			// A seed kept that is not what the plan renders now: what is
			// on disk is unknown to the client, and an earlier plan may
			// have put a secret there (a template naming one, a secret's
			// own path); the node-engine's digest of it would be an
			// oracle for it. Keyed. One that is the render's bytes
			// holds no secret.
			r.Digest = secretDigest(key, fv.Spec.Path, []byte(r.Digest))
		}
		old, had := mo.files[r.Path]
		if had && old.Digest == r.Digest && (r.Action == "unchanged" || r.Action == "kept") {
			continue // a refill that changed nothing says nothing new
		}
		if b, ok := mo.before[r.Path]; ok && !had && (r.Action == "unchanged" || r.Action == "kept") &&
			b.Digest == r.Digest { // a secret-bearing file's keyed alike by every start (ReportKey)
			mo.files[r.Path] = b // nor does a restart's first fill
			continue
		}
		if fv != nil {
			r.Path = fv.Spec.Path // the same bytes, already held: not the answer's copy
		}
		r.Action = fill.Canonical(r.Action)
		if r.Action == fill.ActionRemoved {
			delete(mo.files, r.Path) // no longer there: logged, not reported
			continue
		}
		mo.files[r.Path] = report.File{Path: r.Path, Action: r.Action, Digest: r.Digest}
	}
	mo.before = nil
	if !req.Whole {
		return
	}
	for p := range mo.files {
		if _, named := sent[p]; !named {
			delete(mo.files, p) // no longer the module's: a seed or managed-keys file is left as it is
		}
	}
}
