package server

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// noReportNamed is how many modules without a report WriteSweep names:
// a node that went quiet has all its modules there, which the JSON lists.
const noReportNamed = 10

// WriteSweep writes the sweep for people, worst first: a block per failed
// finding, a line per failed module r names (FailedModules), a block per
// other finding, a line per orphan, a line per module without a report
// (the first noReportNamed, then how many more); then the summary, with a line saying
// how many modules failed when any did. Every text from the bus is
// escaped, so no key or why can move the terminal (a why or reason is
// quoted).
func WriteSweep(w io.Writer, r SweepReply) {
	at, _ := time.Parse(time.RFC3339, r.At)
	for _, f := range r.Findings {
		if f.Verdict == VerdictFailed {
			writeFinding(w, f, at)
		}
	}
	for _, m := range r.FailedModules {
		fmt.Fprintf(w, "%-12s  module %s/%s  %s%s\n", VerdictFailed, control.Escape(m.Node), control.Escape(m.Module),
			strconv.Quote(m.Reason), since(at, m.At))
	}
	for _, f := range r.Findings {
		if f.Verdict != VerdictFailed {
			writeFinding(w, f, at)
		}
	}
	for _, o := range r.Orphans {
		fmt.Fprintf(w, "%-12s  %s %s  %s\n", "orphan", control.Escape(o.Bucket), control.Escape(o.Key), strconv.Quote(o.Why))
	}
	for i, m := range r.NoReport {
		if i == noReportNamed {
			fmt.Fprintf(w, "%-12s  and %d more (sweep --json lists them)\n", "no report", len(r.NoReport)-i)
			break
		}
		fmt.Fprintf(w, "%-12s  %s/%s\n", "no report", control.Escape(m.Node), control.Escape(m.Module))
	}
	if len(r.Findings)+len(r.FailedModules)+len(r.Orphans)+len(r.NoReport) > 0 {
		fmt.Fprintln(w)
	}
	s := r.Summary
	fmt.Fprintf(w, "modules %d: %d applied, %d waiting, %d failed", s.Modules, s.Applied, s.Waiting, s.Failed)
	if s.Removed > 0 {
		fmt.Fprintf(w, ", %d removed", s.Removed)
	}
	if s.ReportOutOfShape > 0 {
		fmt.Fprintf(w, ", %d with %s out of shape (named above)", s.ReportOutOfShape, plural(s.ReportOutOfShape, "its report", "their report"))
		if s.ReportOutOfShapeStood > 0 {
			fmt.Fprintf(w, ", %d of them for over %s", s.ReportOutOfShapeStood, control.Escape(r.StoodAfter))
		}
	}
	fmt.Fprintln(w)
	if s.NoReport > 0 {
		fmt.Fprintf(w, "%d assigned without a report (their node's client has not reported)", s.NoReport)
		if s.NoReportStood > 0 {
			fmt.Fprintf(w, ", %d of them for over %s", s.NoReportStood, control.Escape(r.StoodAfter))
		}
		fmt.Fprintln(w)
	}
	if s.Failed > 0 {
		// A failed module may leave every need met: say why the mesh is
		// held back (and the sweep exits 1) all the same.
		fmt.Fprintln(w, failedModulesLine(s.Failed, len(r.FailedModules) > 0))
	}
	n := s.Needs
	fmt.Fprintf(w, "needs %d: %d met, %d waiting, %d stood asked (over %s), %d failed\n",
		n.Met+n.Waiting+n.StoodAsked+n.Failed, n.Met, n.Waiting, n.StoodAsked, control.Escape(r.StoodAfter), n.Failed)
	if s.StoodModules > 0 {
		fmt.Fprintf(w, "%d %s stood asked on their own plan or templates archive (over %s)\n",
			s.StoodModules, plural(s.StoodModules, "module", "modules"), control.Escape(r.StoodAfter))
	}
	if s.OutOfShape > 0 || s.Orphans > 0 {
		fmt.Fprintf(w, "keys: %d out of shape, %d %s\n", s.OutOfShape, s.Orphans, plural(s.Orphans, "orphan", "orphans"))
	}
	var empty []string
	for _, m := range r.MissingBuckets {
		if m == spec.AssignmentsBucket {
			// Not judged as empty: every key would be an orphan.
			fmt.Fprintf(w, "missing bucket %s: no module is known assigned, so orphans and modules without a report are not judged\n", m)
			continue
		}
		empty = append(empty, control.Escape(m))
	}
	if len(empty) > 0 {
		fmt.Fprintf(w, "missing buckets (judged as empty): %s\n", strings.Join(empty, ", "))
	}
	for _, u := range r.UnreadableBuckets {
		judged := "judged as empty"
		if u == spec.AssignmentsBucket {
			judged = "no module is known assigned, so orphans and modules without a report are not judged"
		}
		fmt.Fprintf(w, "not permitted to read %s (the bus refuses the server's user; `mesh-provisioner rights --role %s` lists what it reads): %s\n",
			control.Escape(u), spec.RoleServer, judged)
	}
	when := control.Escape(r.At)
	if !at.IsZero() {
		when = at.UTC().Format(time.RFC3339) // to the second, for people
	}
	fmt.Fprintf(w, "swept at %s\n", when)
}

// writeFinding writes f as a block: a line saying what holds back and
// why, then under it every node/module f names, one a line, and how many
// the reply left out.
func writeFinding(w io.Writer, f Finding, at time.Time) {
	what := control.Escape(f.Kind) + " " + control.Escape(f.Name)
	if f.Verdict == VerdictOutOfShape {
		what = control.Escape(f.Bucket) + " " + control.Escape(f.Key)
	}
	fmt.Fprintf(w, "%-12s  %s  %s  %s%s\n", f.Verdict, control.Escape(f.Owner), what, strconv.Quote(f.Why), since(at, f.Since))
	for _, n := range f.Needs {
		fmt.Fprintf(w, "%-12s  %s/%s\n", "", control.Escape(n.Node), control.Escape(n.Module))
	}
	if f.NeedsLeftOut > 0 {
		// A module's own wait is in its report, not among the needs: the
		// verb's what=needs would list none of the modules left out.
		what := "needs"
		if f.Kind == kindModule {
			what = "applied"
		}
		fmt.Fprintf(w, "%-12s  and %d more (left out of the reply; the verb's what=%s lists them)\n", "", f.NeedsLeftOut, what)
	}
}

// since is "  since <how long before at>" for the RFC 3339 time t, or
// nothing when either time is unknown.
func since(at time.Time, t string) string {
	s, err := time.Parse(time.RFC3339, t)
	if err != nil || at.IsZero() {
		return ""
	}
	return "  since " + ago(at.Sub(s))
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

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
