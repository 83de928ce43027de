package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// moduleOut is what the daemon last filled and said of a module.
type moduleOut struct {
	filled   map[string]*nodes.FileValue // path → the value last filled (the engine keeps an equal value's pointer)
	files    map[string]report.File      // path → what the report says of it
	items    map[string][]byte           // collection → text last recorded
	state    string
	failure  string // the fill socket's failure, until a fill succeeds
	retry    bool   // a write or fill failed: try again at the next retry tick
	since    time.Time
	lastFill time.Time // when its last fill request was sent (Config.FillGap)
}

// outJob is one module's output after a stabilisation: its view, and the
// fill request to send (nil when no file of it is to be sent).
type outJob struct {
	v    *nodes.ModuleView
	mo   *moduleOut
	req  *fill.Request
	sent map[string]*nodes.FileValue // path → what the request carries
	resp fill.Response
	err  error
}

// maxFillsInFlight bounds the fill requests sent at once (different
// modules; a module's requests are never concurrent).
const maxFillsInFlight = 8

// output brings the touched modules' needs, items, files and reports in
// line with their views. With all set, every file is sent again (start,
// reconnect, refill). The fill requests of different modules go out
// together (the node-engine's durable writes are what a cold start
// waits on); the loop waits for them all before the next batch.
func (d *Daemon) output(ctx context.Context, names []string, all bool) {
	began := time.Now()
	jobs := make([]*outJob, 0, len(names))
	items := map[string]map[string][]byte{}
	for _, name := range names {
		if !all && d.hold(name, began) {
			continue // filled less than a gap ago: held, and sent once it has passed
		}
		if j := d.prepare(name, all); j != nil {
			jobs = append(jobs, j)
			items[name] = j.mo.items
		}
	}
	for module, err := range d.pub.ItemsAll(ctx, items) {
		d.modules[module].retry = true
		d.log.Warn().Err(err).Str("module", module).Msg("items not recorded")
	}
	prepared := time.Since(began)
	sem := make(chan struct{}, maxFillsInFlight)
	var wg sync.WaitGroup
	for _, j := range jobs {
		if j.req == nil {
			continue
		}
		j.mo.lastFill = time.Now()
		wg.Add(1)
		sem <- struct{}{}
		go func(j *outJob) {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			// A fill under way is finished even when the daemon is told to stop.
			j.resp, j.err = d.fill.Fill(context.WithoutCancel(ctx), *j.req)
			d.metrics.fillLatency.Observe(time.Since(start).Seconds())
		}(j)
	}
	wg.Wait()
	filledAt := time.Since(began)
	reports := make([]report.Report, len(jobs))
	for i, j := range jobs {
		if j.req != nil {
			d.filled(j)
		}
		reports[i] = reportOf(j.v, j.mo)
	}
	for i, w := range d.pub.Reports(ctx, reports) {
		d.reported(jobs[i].mo, reports[i], w)
	}
	d.flushNeeds(ctx, false)
	if len(jobs) > 0 {
		d.log.Debug().Int("modules", len(jobs)).Dur("needs_items", prepared).Dur("fills", filledAt-prepared).
			Dur("reports", time.Since(began)-filledAt).Msg("output")
	}
}

// needsDelay bounds how long needs wait to be written while events keep
// coming (a need moving waiting → met within one burst is written once).
const needsDelay = time.Second

// flushNeeds writes the needs of the modules output since the last flush,
// all modules' puts in flight together. Unless forced, it waits while more
// events are queued (they will change the same needs again), up to
// needsDelay: a cold start writes each need once, in its settled state,
// instead of once per batch.
func (d *Daemon) flushNeeds(ctx context.Context, force bool) {
	if len(d.pendingNeeds) == 0 {
		return
	}
	if !force && len(d.events) > 0 && time.Since(d.needsSince) < needsDelay {
		return
	}
	for module, err := range d.pub.NeedsAll(ctx, d.pendingNeeds) {
		if mo := d.modules[module]; mo != nil {
			mo.retry = true
		}
		d.log.Warn().Err(err).Str("module", module).Msg("needs not written")
	}
	clear(d.pendingNeeds)
}

// prepare works out a module's items (written by the caller, all
// modules' together), queues its needs and makes its fill request.
func (d *Daemon) prepare(name string, all bool) *outJob {
	v := d.mesh.View(name)
	if v == nil {
		return nil
	}
	mo := d.modules[name]
	if mo == nil {
		mo = &moduleOut{filled: map[string]*nodes.FileValue{}, files: map[string]report.File{}, items: map[string][]byte{}}
		d.modules[name] = mo
	}
	mo.retry = false
	if len(d.pendingNeeds) == 0 {
		d.needsSince = time.Now()
	}
	d.pendingNeeds[name] = needsOf(d.cfg.Node, v)
	for _, it := range v.Items {
		switch _, known := mo.items[it.Collection]; {
		case it.State == graph.Ready:
			mo.items[it.Collection] = it.Text
		case it.State == graph.Failed:
			delete(mo.items, it.Collection) // a failed item is not recorded
		case !known:
			mo.items[it.Collection] = nil // waiting, no text in this run yet: keep what is recorded
		}
	}
	for c := range mo.items {
		if !hasItem(v, c) {
			delete(mo.items, c)
		}
	}
	j := &outJob{v: v, mo: mo}
	j.req, j.sent = fillRequest(v, mo, all)
	return j
}

func hasItem(v *nodes.ModuleView, c string) bool {
	for _, it := range v.Items {
		if it.Collection == c {
			return true
		}
	}
	return false
}

// fillRequest holds the module's changed files (all of them with all),
// once every file of it is ready; nil when there is nothing to send.
func fillRequest(v *nodes.ModuleView, mo *moduleOut, all bool) (*fill.Request, map[string]*nodes.FileValue) {
	req := &fill.Request{Module: v.Name}
	for _, f := range v.Files {
		if f.State != graph.Ready {
			return nil, nil // nothing of a module is written until every file is there
		}
	}
	sent := map[string]*nodes.FileValue{}
	for _, f := range v.Files {
		if !all && mo.filled[f.Path] == f.Value {
			continue
		}
		sent[f.Path] = f.Value
		s := f.Value.Spec
		req.Files = append(req.Files, fill.File{Path: s.Path, Form: s.Form, Content: f.Value.Content,
			Owner: s.Owner, Group: s.Group, Mode: s.Mode,
			OnChange: fill.OnChange{Action: s.OnChange.Action, Unit: s.OnChange.Unit}})
	}
	if len(req.Files) == 0 {
		return nil, nil
	}
	return req, sent
}

// filled takes in the fill socket's answer to a module's request.
func (d *Daemon) filled(j *outJob) {
	v, mo, resp, err, sent := j.v, j.mo, j.resp, j.err, j.sent
	if err != nil {
		d.metrics.fills.WithLabelValues("failed").Inc()
		mo.failure = err.Error()
		mo.retry = true
		return
	}
	d.metrics.fills.WithLabelValues("ok").Inc()
	mo.failure = ""
	secret := map[string][]byte{}
	for _, f := range v.Files {
		if f.Value.Secret {
			secret[f.Path] = f.Value.Content
		}
	}
	for p, fv := range sent {
		mo.filled[p] = fv
	}
	for _, r := range resp.Files {
		if c, ok := secret[r.Path]; ok {
			r.Digest = d.secretDigest(c)
		}
		old, had := mo.files[r.Path]
		if had && old.Digest == r.Digest && (r.Action == "unchanged" || r.Action == "kept") {
			continue // a refill that changed nothing says nothing new
		}
		mo.files[r.Path] = report.File{Path: r.Path, Action: r.Action, Digest: r.Digest}
	}
}

// secretDigest keys a secret-bearing file's digest with a key kept in
// memory, so no report is an oracle for a secret.
func (d *Daemon) secretDigest(content []byte) string {
	h := hmac.New(sha256.New, d.hmac)
	h.Write(content)
	return "hmac-sha256:" + hex.EncodeToString(h.Sum(nil))
}

// reportOf is the report a module's view and its last fill make.
func reportOf(v *nodes.ModuleView, mo *moduleOut) report.Report {
	r := report.Report{Module: v.Name}
	switch {
	case v.State == graph.Failed:
		r.State, r.Reason = "failed", v.Reason
	case v.State == graph.Waiting:
		r.State = "waiting"
		r.Waiting = waitingOf(v)
	case mo.failure != "":
		r.State, r.Reason = "failed", mo.failure
	default:
		r.State = "applied"
	}
	for _, f := range v.Files {
		if rf, ok := mo.files[f.Path]; ok {
			r.Files = append(r.Files, rf)
		}
	}
	return r
}

// reported takes in what became of a module's report, and logs a change
// of its state.
func (d *Daemon) reported(mo *moduleOut, r report.Report, w report.Written) {
	if w.Err != nil {
		mo.retry = true
		d.log.Warn().Err(w.Err).Str("module", r.Module).Msg("report not written")
	}
	if r.State == mo.state {
		return
	}
	if w.Wrote || w.Err != nil {
		mo.since = time.Now()
	}
	ev := d.log.Info()
	if r.State == "failed" {
		ev = d.log.Warn()
	}
	ev = ev.Str("module", r.Module).Str("state", r.State).Str("was", mo.state)
	if r.Reason != "" {
		ev = ev.Str("reason", r.Reason)
	}
	if len(r.Waiting) > 0 {
		ev = ev.Interface("waiting", r.Waiting)
	}
	ev.Msg("module " + r.State)
	mo.state = r.State
}

func waitingOf(v *nodes.ModuleView) []report.Waiting {
	var out []report.Waiting
	for _, n := range v.Needs {
		if n.State == graph.Waiting {
			out = append(out, report.Waiting{Kind: n.Kind, Name: n.Name, Why: n.Why})
		}
	}
	if len(out) == 0 {
		out = append(out, report.Waiting{Kind: "module", Name: v.Name, Why: v.Reason})
	}
	return out
}

func needsOf(node string, v *nodes.ModuleView) []report.Need {
	out := make([]report.Need, len(v.Needs))
	for i, n := range v.Needs {
		st := "met"
		switch n.State {
		case graph.Waiting:
			st = "waiting"
		case graph.Failed:
			st = "failed"
		}
		out[i] = report.Need{Node: node, Module: v.Name, Kind: n.Kind, Name: n.Name, State: st, Why: n.Why}
	}
	return out
}

// removed says a module was taken off this node: its needs and items go,
// a removed report is published and its applied key deleted. The
// node-engine removes the files.
func (d *Daemon) removed(ctx context.Context, name string) {
	delete(d.pendingNeeds, name)
	if err := d.pub.Needs(ctx, name, nil); err != nil {
		d.log.Warn().Err(err).Str("module", name).Msg("needs not deleted")
	}
	if err := d.pub.Items(ctx, name, nil); err != nil {
		d.log.Warn().Err(err).Str("module", name).Msg("items not deleted")
	}
	if _, err := d.pub.Report(ctx, report.Report{Module: name, State: "removed"}); err != nil {
		d.log.Warn().Err(err).Str("module", name).Msg("removed report not published")
	}
	delete(d.modules, name)
	d.log.Info().Str("module", name).Str("state", "removed").Msg("module removed")
}
