package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// FailedModule is a module whose report (the applied bucket) says failed,
// with the report's reason and time (SweepReply.FailedModules).
type FailedModule struct {
	Key    string `json:"key"` // its key in the applied bucket
	Node   string `json:"node"`
	Module string `json:"module"`
	Reason string `json:"reason"`
	At     string `json:"at"` // the report's at, RFC 3339
}

// AskFailedModules asks the verb for the reports (what "applied") narrowed
// to node and module (either may be empty), joining the pages, and returns
// those whose state is failed, in key order. A report too large for a
// reply (value_too_large) cannot be read and is left out. A reply
// {"error"} is an error.
func AskFailedModules(ctx context.Context, nc *nats.Conn, node, module string) ([]FailedModule, error) {
	var failed []FailedModule
	err := askPages(ctx, nc, Request{What: "applied", Node: node, Module: module}, "the reports", func(_ int, data []byte) error {
		var r struct {
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
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("the reports' reply is not JSON: %w", err)
		}
		for _, e := range r.Entries {
			if e.Value.State == "failed" {
				failed = append(failed, FailedModule{Key: e.Key, Node: e.Node, Module: e.Module, Reason: e.Value.Reason, At: e.Value.At})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return failed, nil
}
