package server

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/outputs/control"
)

// shownNeeds is how many node/modules a finding's line names before "+N".
const shownNeeds = 2

// WriteSweep writes the sweep for people: one line per finding, worst
// first, one per failed module r names (FailedModules), one per orphan,
// then the summary, with a line saying how many modules failed when any
// did. Every text from the bus is escaped, so no key or why can move the
// terminal (a why or reason is quoted).
func WriteSweep(w io.Writer, r SweepReply) {
	at, _ := time.Parse(time.RFC3339, r.At)
	for _, f := range r.Findings {
		what := control.Escape(f.Kind) + " " + control.Escape(f.Name)
		if f.Verdict == VerdictOutOfShape {
			what = control.Escape(f.Bucket) + " " + control.Escape(f.Key)
		}
		line := fmt.Sprintf("%-12s  %s  %s  %s", f.Verdict, control.Escape(f.Owner), what, strconv.Quote(f.Why))
		if since, err := time.Parse(time.RFC3339, f.Since); err == nil && !at.IsZero() {
			line += "  since " + ago(at.Sub(since))
		}
		if len(f.Needs) > 0 {
			var who []string
			for _, n := range f.Needs[:min(shownNeeds, len(f.Needs))] {
				who = append(who, control.Escape(n.Node)+"/"+control.Escape(n.Module))
			}
			if more := f.Count - len(who); more > 0 {
				who = append(who, fmt.Sprintf("+%d", more))
			}
			line += "  — " + strings.Join(who, ", ")
		}
		fmt.Fprintln(w, line)
	}
	for _, m := range r.FailedModules {
		line := fmt.Sprintf("%-12s  module %s/%s  %s", VerdictFailed, control.Escape(m.Node), control.Escape(m.Module), strconv.Quote(m.Reason))
		if since, err := time.Parse(time.RFC3339, m.At); err == nil && !at.IsZero() {
			line += "  since " + ago(at.Sub(since))
		}
		fmt.Fprintln(w, line)
	}
	for _, o := range r.Orphans {
		fmt.Fprintf(w, "%-12s  %s %s  %s\n", "orphan", control.Escape(o.Bucket), control.Escape(o.Key), strconv.Quote(o.Why))
	}
	if len(r.Findings)+len(r.FailedModules)+len(r.Orphans) > 0 {
		fmt.Fprintln(w)
	}
	s := r.Summary
	fmt.Fprintf(w, "modules %d: %d applied, %d waiting, %d failed", s.Modules, s.Applied, s.Waiting, s.Failed)
	if s.Removed > 0 {
		fmt.Fprintf(w, ", %d removed", s.Removed)
	}
	fmt.Fprintln(w)
	if s.Failed > 0 {
		// A failed module may leave every need met: say why the mesh is
		// held back (and the sweep exits 1) all the same.
		fmt.Fprintln(w, failedModulesLine(s.Failed, len(r.FailedModules) > 0))
	}
	n := s.Needs
	fmt.Fprintf(w, "needs %d: %d met, %d waiting, %d stood asked (over %s), %d failed\n",
		n.Met+n.Waiting+n.StoodAsked+n.Failed, n.Met, n.Waiting, n.StoodAsked, control.Escape(r.StoodAfter), n.Failed)
	if s.OutOfShape > 0 || s.Orphans > 0 {
		fmt.Fprintf(w, "keys: %d out of shape, %d orphans\n", s.OutOfShape, s.Orphans)
	}
	if len(r.MissingBuckets) > 0 {
		var b []string
		for _, m := range r.MissingBuckets {
			b = append(b, control.Escape(m))
		}
		fmt.Fprintf(w, "missing buckets (judged as empty): %s\n", strings.Join(b, ", "))
	}
	when := control.Escape(r.At)
	if !at.IsZero() {
		when = at.UTC().Format(time.RFC3339) // to the second, for people
	}
	fmt.Fprintf(w, "swept at %s\n", when)
}

// failedModulesLine says that n modules failed and where to see why:
// above when named is true, else on their nodes.
func failedModulesLine(n int, named bool) string {
	which, its := fmt.Sprintf("%d modules", n), "their nodes"
	if n == 1 {
		which, its = "1 module", "its node"
	}
	if named {
		return fmt.Sprintf("%s failed (named above; mesh-provisioner-client status on %s says more)", which, its)
	}
	return fmt.Sprintf("%s failed: mesh-provisioner-client status on %s says why", which, its)
}

// ago is a duration for people: 2h10m, 4m12s, 35s.
func ago(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
