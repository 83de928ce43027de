package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// FailedModule is a module whose report (the applied bucket) says failed,
// with the report's reason and time: what the sweep's people's output
// names when modules failed, as the sweep's reply only counts them.
type FailedModule struct {
	Key    string // its key in the applied bucket
	Node   string
	Module string
	Reason string
	At     string // the report's at, RFC 3339
}

// AskFailedModules asks the verb for the reports (what "applied") narrowed
// to node and module (either may be empty), joining the pages, and returns
// those whose state is failed, in key order. A report too large for a
// reply (value_too_large) cannot be read and is left out. A reply
// {"error"} is an error.
func AskFailedModules(ctx context.Context, nc *nats.Conn, node, module string) ([]FailedModule, error) {
	var failed []FailedModule
	for page := 0; ; page++ {
		body, _ := json.Marshal(Request{What: "applied", Node: node, Module: module, Page: page})
		m, err := nc.RequestWithContext(ctx, spec.QuerySubject, body)
		if err != nil {
			return nil, fmt.Errorf("asking %s for the reports: %w", spec.QuerySubject, err)
		}
		var r struct {
			Pages   int    `json:"pages"`
			Error   string `json:"error"`
			Entries []struct {
				Key    string `json:"key"`
				Node   string `json:"node"`
				Module string `json:"module"`
				Value  struct {
					State  string `json:"state"`
					Reason string `json:"reason"`
					At     string `json:"at"`
				} `json:"value"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, fmt.Errorf("the reports' reply is not JSON: %w", err)
		}
		if r.Error != "" {
			return nil, fmt.Errorf("the server answered: %s", r.Error)
		}
		for _, e := range r.Entries {
			if e.Value.State == "failed" {
				failed = append(failed, FailedModule{Key: e.Key, Node: e.Node, Module: e.Module, Reason: e.Value.Reason, At: e.Value.At})
			}
		}
		if page+1 >= r.Pages {
			return failed, nil
		}
	}
}
