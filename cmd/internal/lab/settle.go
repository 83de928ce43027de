package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// The example mesh's module that waits on purpose (examples/README.md):
// g14's grafana names ${config:smtp-host}, which nobody sets.
const (
	WaitingNode   = "g14"
	WaitingModule = "grafana"
	WaitingConfig = "smtp-host"
)

// quiet is how long the applied bucket must stay unchanged, once every
// module is where it should be, for the lab to call the mesh settled: a
// collector is applied first with the items there so far, then filled
// again as the others arrive.
const quiet = 750 * time.Millisecond

// reports follows the applied bucket: the last report of each module.
type reports struct {
	want []string // every assignment's key <node>.<module>
	// valueSet: the config bucket holds the value WaitingModule waits
	// for (set on a kept bus, as the tour does), so it applies too.
	valueSet bool
	since    time.Time // reports from before (a kept lab's) do not count
	byKey    map[string]report.Report
	changed  time.Time // the last change seen
}

func newReports(want []string, since time.Time) *reports {
	return &reports{want: want, since: since.Truncate(time.Second), byKey: map[string]report.Report{}}
}

// current says whether rep was written by this lab's clients.
func (r *reports) current(rep report.Report) bool {
	at, err := time.Parse(time.RFC3339Nano, rep.At)
	return err == nil && !at.Before(r.since)
}

// forgetReports deletes the kept reports of the example mesh's modules
// (keys) before a kept lab's clients start. A client adopts the report
// its bucket holds and writes none while nothing differs from it (SPEC
// §5.3), so a module a kept lab left unchanged would never report to this
// lab, which counts only reports written since it started (current), and
// --once would wait out --settle and fail. Forgotten, each module reports
// afresh (its files "unchanged" where they were kept); the files, state
// directories and the rest of the bus are kept as --keep says.
func forgetReports(ctx context.Context, applied jetstream.KeyValue, keys []string) error {
	for _, k := range keys {
		if err := applied.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("forgetting the kept report %s of %s: %w", k, spec.AppliedBucket, err)
		}
	}
	return nil
}

// waitingValueSet says whether the config bucket holds the value the
// waiting module waits for: a fresh lab's never does, a kept one's does
// once the tour set it.
func waitingValueSet(ctx context.Context, js jetstream.JetStream) (bool, error) {
	kv, err := js.KeyValue(ctx, spec.ConfigBucket)
	if err != nil {
		return false, fmt.Errorf("opening bucket %s: %w", spec.ConfigBucket, err)
	}
	_, err = kv.Get(ctx, spec.EncodeKey(WaitingNode, WaitingModule, WaitingConfig))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s of %s: %w", spec.EncodeKey(WaitingNode, WaitingModule, WaitingConfig), spec.ConfigBucket, err)
	}
	return true, nil
}

// apply takes one watch entry; it returns the report it decoded, if any.
func (r *reports) apply(e jetstream.KeyValueEntry) (*report.Report, error) {
	r.changed = time.Now()
	if e.Operation() != jetstream.KeyValuePut {
		delete(r.byKey, e.Key())
		return nil, nil
	}
	// The names are the key's (SPEC §2.1) where the value leaves them
	// out; a key out of shape is no module's report, and said so.
	toks, err := spec.DecodeKey(e.Key(), 2)
	if err != nil {
		return nil, fmt.Errorf("key %s of %s is out of shape, no report: %w", e.Key(), spec.AppliedBucket, err)
	}
	var rep report.Report
	if err := json.Unmarshal(e.Value(), &rep); err != nil {
		return nil, fmt.Errorf("report %s of %s is not a report: %w", e.Key(), spec.AppliedBucket, err)
	}
	if rep.Node == "" {
		rep.Node = toks[0]
	}
	if rep.Module == "" {
		rep.Module = toks[1]
	}
	r.byKey[e.Key()] = rep
	return &rep, nil
}

// unsettled says what is not yet as the example mesh should end up: every
// module applied, grafana on g14 waiting (applied when its value is set:
// valueSet); nil when all is.
func (r *reports) unsettled() error {
	var errs []error
	for _, key := range r.want {
		rep, ok := r.byKey[key]
		switch {
		case !ok || !r.current(rep):
			errs = append(errs, fmt.Errorf("%s: no report yet", key))
		case key == spec.EncodeKey(WaitingNode, WaitingModule) && !r.valueSet:
			if rep.State != "waiting" {
				errs = append(errs, fmt.Errorf("%s is %s, want waiting (on config %s)%s", key, rep.State, WaitingConfig, because(rep)))
			}
		case rep.State != "applied":
			errs = append(errs, fmt.Errorf("%s is %s, want applied%s", key, rep.State, because(rep)))
		}
	}
	return errors.Join(errs...)
}

func because(rep report.Report) string {
	if rep.Reason != "" {
		return ": " + rep.Reason
	}
	var w []string
	for _, x := range rep.Waiting {
		w = append(w, x.Kind+" "+x.Name)
	}
	if len(w) > 0 {
		return ": waits for " + strings.Join(w, ", ")
	}
	return ""
}

// settle follows updates until the mesh is settled (nil), until timeout
// passes (the reason it is not), or until ctx ends.
func (r *reports) settle(ctx context.Context, updates <-chan jetstream.KeyValueEntry, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-updates:
			if !ok {
				return fmt.Errorf("the watch of %s ended", spec.AppliedBucket)
			}
			if e == nil {
				continue // the initial values are in
			}
			if _, err := r.apply(e); err != nil {
				return err
			}
		case <-tick.C:
			if r.unsettled() == nil && time.Since(r.changed) >= quiet {
				return nil
			}
		case <-deadline.C:
			err := r.unsettled()
			if err == nil {
				return nil
			}
			return fmt.Errorf("not settled after %s:\n%w", timeout, err)
		}
	}
}

// summary writes one line per module: node, module, state, and its files
// (or what it waits for).
func (r *reports) summary(w io.Writer, rootShown string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tMODULE\tSTATE\tFILES (under %s/<node>)\n", rootShown)
	for _, key := range slices.Sorted(maps.Keys(r.byKey)) {
		rep := r.byKey[key]
		var what string
		if rep.State == "applied" {
			var paths []string
			for _, f := range rep.Files {
				paths = append(paths, f.Path)
			}
			what = strings.Join(paths, " ")
		} else {
			what = "nothing written" + because(rep)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rep.Node, rep.Module, rep.State, what)
	}
	tw.Flush()
}

// describe is one line saying what a new report says, naming the files
// it moved: those written, merged or removed whose entry differs from
// the module's last report (prev; nil: none). A report lists each file
// with the action of its last fill, so a file this fill did not send
// still says "written", from the fill that wrote it.
func describe(rep, prev *report.Report) string {
	s := fmt.Sprintf("%s %s: %s", rep.Node, rep.Module, rep.State)
	before := map[report.File]bool{}
	if prev != nil {
		for _, f := range prev.Files {
			before[f] = true
		}
	}
	var moved []string
	for _, f := range rep.Files {
		if f.Action != "unchanged" && f.Action != "kept" && !before[f] {
			moved = append(moved, f.Path+" "+f.Action)
		}
	}
	if len(moved) > 0 {
		s += " (" + strings.Join(moved, ", ") + ")"
	}
	return s + because(*rep)
}
