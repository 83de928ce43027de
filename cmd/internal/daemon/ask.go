package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

type askRequest struct {
	Module string `json:"module"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
}

type askReply struct {
	Value *string `json:"value,omitempty"`
	Error string  `json:"error,omitempty"`
}

// serveAsk answers prov.ask.<node> (SPEC §5.4): a config value as
// mesh-config_resolved holds it, only for a module assigned to this node
// and a key resolved for it. Nothing else is answered, a secret never.
func (d *Daemon) serveAsk(ctx context.Context) (func(), error) {
	sub, err := d.nc.Subscribe(spec.AskSubject(d.cfg.Node), func(msg *nats.Msg) {
		reply := d.answer(ctx, msg.Data)
		b, _ := json.Marshal(reply)
		_ = msg.Respond(b)
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

func (d *Daemon) answer(ctx context.Context, data []byte) askReply {
	var q askRequest
	if err := json.Unmarshal(data, &q); err != nil {
		return askReply{Error: "request is not {module, kind, key}: " + err.Error()}
	}
	if q.Kind != string(spec.Config) {
		return askReply{Error: "kind " + q.Kind + " is not answered here: only config values are (a secret never)"}
	}
	if q.Module == "" || q.Key == "" {
		return askReply{Error: "module and key are required"}
	}
	var out askReply
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := d.Do(cctx, func(m *nodes.Mesh) {
		if !m.HasModule(q.Module) {
			out.Error = "module " + q.Module + " is not assigned to node " + d.cfg.Node
			return
		}
		v, ok := m.ConfigValue(q.Module, q.Key)
		if !ok {
			out.Error = "no config value " + q.Key + " is resolved for module " + q.Module
			return
		}
		s := string(v)
		out.Value = &s
	})
	if err != nil {
		return askReply{Error: "the client is busy: " + err.Error()}
	}
	return out
}
