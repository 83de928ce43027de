package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// sweepTimeout bounds the whole sweep: connecting, and every page.
const sweepTimeout = time.Minute

// sweep asks the server's verb for a sweep and prints it: exit 0 when
// nothing failed or stood asked, 1 when something did, 2 when the sweep
// could not be made (SPEC §6.2).
func sweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mesh-provisioner sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats", "nats://127.0.0.1:4222", "NATS URL of the bus")
	creds := fs.String("creds", "", "NATS credentials file")
	node := fs.String("node", "", "only this node's needs")
	module := fs.String("module", "", "only this module's needs")
	stoodAfter := fs.Duration("stood-after", 10*time.Minute, "a need waiting longer than this stood asked")
	asJSON := fs.Bool("json", false, "print the reply as JSON (all pages joined)")
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	if err := cli.Positive(fs, "stood-after"); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	opts := []nats.Option{nats.Name("mesh-provisioner sweep"), nats.Timeout(5 * time.Second),
		nats.CustomInboxPrefix("_INBOX.mesh-provisioner"), nats.NoReconnect()}
	if *creds != "" {
		opts = append(opts, nats.UserCredentials(*creds))
	}
	nc, err := nats.Connect(*natsURL, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: connecting to %s: %v\n", *natsURL, err)
		return 2
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sweepTimeout)
	defer cancel()
	r, err := server.AskSweep(ctx, nc, *node, *module, stoodAfter.String())
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	if *asJSON {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
			return 2
		}
		_, _ = stdout.Write(control.JSONSafe(b.Bytes()))
	} else {
		printSweep(stdout, r)
	}
	if r.Held() {
		return 1
	}
	return 0
}

// shownNeeds is how many node/modules a finding's line names before "+N".
const shownNeeds = 2

// printSweep writes the sweep for people: one line per finding, worst
// first, one per orphan, then the summary. Every text from the bus is
// escaped, so no key or why can move the terminal (a why is quoted).
func printSweep(w io.Writer, r server.SweepReply) {
	at, _ := time.Parse(time.RFC3339, r.At)
	for _, f := range r.Findings {
		what := control.Escape(f.Kind) + " " + control.Escape(f.Name)
		if f.Verdict == server.VerdictOutOfShape {
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
	for _, o := range r.Orphans {
		fmt.Fprintf(w, "%-12s  %s %s  %s\n", "orphan", control.Escape(o.Bucket), control.Escape(o.Key), strconv.Quote(o.Why))
	}
	if len(r.Findings)+len(r.Orphans) > 0 {
		fmt.Fprintln(w)
	}
	s := r.Summary
	fmt.Fprintf(w, "modules %d: %d applied, %d waiting, %d failed", s.Modules, s.Applied, s.Waiting, s.Failed)
	if s.Removed > 0 {
		fmt.Fprintf(w, ", %d removed", s.Removed)
	}
	n := s.Needs
	fmt.Fprintf(w, "\nneeds %d: %d met, %d waiting, %d stood asked (over %s), %d failed\n",
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
	fmt.Fprintf(w, "swept at %s\n", control.Escape(r.At))
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
