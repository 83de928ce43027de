package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// AskSweep asks the verb for a sweep narrowed to node and module (either
// may be empty) with stoodAfter ("" for the default) and joins its pages
// into one reply (Page and Pages zero). Pages of two different sweeps are
// not joined: a later page of another sweep than page 0's (a second server
// on the bus answered it) is asked again, up to eight times; then (the
// server no longer kept page 0's sweep) the whole is asked again, up to
// three times. A reply {"error"} is an error.
func AskSweep(ctx context.Context, nc *nats.Conn, node, module, stoodAfter string) (SweepReply, error) {
	for range 3 {
		r, err := askSweepOnce(ctx, nc, Request{What: "sweep", Node: node, Module: module, StoodAfter: stoodAfter})
		if !errors.Is(err, errSweepMoved) {
			return r, err
		}
	}
	return SweepReply{}, fmt.Errorf("the sweep's pages kept coming from different sweeps")
}

var errSweepMoved = errors.New("pages of different sweeps")

func askSweepOnce(ctx context.Context, nc *nats.Conn, req Request) (SweepReply, error) {
	var all SweepReply
	err := askPages(ctx, nc, req, "a sweep", func(page int, data []byte) error {
		var r SweepReply
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("the sweep's reply is not JSON: %w", err)
		}
		if page == 0 {
			all = r
			all.Findings = joinFindings([]Finding{}, r.Findings) // [] when none, as the verb says
			return nil
		}
		if r.At != all.At {
			return errors.Join(errSweepMoved, errAskAgain)
		}
		all.Findings = joinFindings(all.Findings, r.Findings)
		all.Orphans = append(all.Orphans, r.Orphans...)
		all.NoReport = append(all.NoReport, r.NoReport...)
		all.FailedModules = append(all.FailedModules, r.FailedModules...)
		return nil
	})
	if err != nil {
		return SweepReply{}, err
	}
	all.Page, all.Pages = 0, 0
	return all, nil
}

// joinFindings appends more to all, a part of a finding (Continued) to
// the finding before it.
func joinFindings(all, more []Finding) []Finding {
	for _, f := range more {
		if f.Continued && len(all) > 0 {
			last := &all[len(all)-1]
			last.Needs = append(last.Needs, f.Needs...)
			last.NeedsLeftOut += f.NeedsLeftOut
			continue
		}
		all = append(all, f)
	}
	return all
}
