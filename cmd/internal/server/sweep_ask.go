package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// AskSweep asks the verb for a sweep narrowed to node and module (either
// may be empty) with stoodAfter ("" for the default) and joins its pages
// into one reply (Page and Pages zero). Pages of two different sweeps (the
// server no longer kept the first) are not joined: it asks again, up to
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
	for page := 0; ; page++ {
		req.Page = page
		body, _ := json.Marshal(req)
		m, err := nc.RequestWithContext(ctx, spec.QuerySubject, body)
		if err != nil {
			return SweepReply{}, fmt.Errorf("asking %s for a sweep: %w", spec.QuerySubject, err)
		}
		var r SweepReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return SweepReply{}, fmt.Errorf("the sweep's reply is not JSON: %w", err)
		}
		if r.Error != "" {
			return SweepReply{}, fmt.Errorf("the server answered: %s", r.Error)
		}
		if page == 0 {
			all = r
		} else {
			if r.At != all.At {
				return SweepReply{}, errSweepMoved
			}
			all.Findings = append(all.Findings, r.Findings...)
			all.Orphans = append(all.Orphans, r.Orphans...)
		}
		if page+1 >= r.Pages {
			all.Page, all.Pages = 0, 0
			return all, nil
		}
	}
}
