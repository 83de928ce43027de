package daemon

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The control socket (SPEC §5.5): its HTTP handler; the socket, and the
// answers, are outputs/control's.

// serveControl serves ControlHandler on the control socket.
func (d *Daemon) serveControl() (func(), error) {
	stop, err := control.Serve(d.cfg.Control, d.ControlHandler(), func(uid int, path string) {
		d.log.Warn().Int("peer_uid", uid).Str("path", path).Msg("control socket: request refused")
	}, control.ErrorLog(d.log))
	if err == nil {
		d.log.Info().Str("socket", d.cfg.Control).Msg("control socket answering")
	}
	return stop, err
}

// ControlHandler is the control socket's HTTP handler (outputs/control's
// routes over this daemon; without the peer check, which needs the socket).
func (d *Daemon) ControlHandler() http.Handler {
	return control.Handler(control.Source{
		NotReady:  d.notReady,
		Unhealthy: d.fillHealth.Unhealthy,
		OnLoop: func(ctx context.Context, fn func(control.Answers)) error {
			return d.DoHeld(ctx, func(*nodes.NodeGraph) { fn(d.answers()) })
		},
		Metrics: promhttp.HandlerFor(d.metrics.Registry(), promhttp.HandlerOpts{}),
	})
}

// notReady says why the daemon is not ready (none: it is).
func (d *Daemon) notReady() []string {
	var not []string
	if !d.connected.Load() {
		not = append(not, "the bus is not connected")
	}
	if !d.ready.Load() {
		not = append(not, "the initial load is not done")
	}
	if why := d.unread.Load(); why != nil {
		not = append(not, *why)
	}
	if why := d.inbox.Refused(); why != "" {
		not = append(not, why)
	}
	if why := d.overwritten.Why(); why != "" {
		not = append(not, why)
	}
	return not
}

// answers builds the control socket's answers from the mesh: call it on
// the loop.
func (d *Daemon) answers() control.Answers {
	a := control.Answers{Node: d.cfg.Node, FillSocket: d.cfg.FillSocket, Graph: d.mesh, State: d.moduleState}
	if d.out != nil {
		a.Removing = d.out.Removing
	}
	return a
}

// moduleState is what the module's report says (control.StateOf).
func (d *Daemon) moduleState(v *nodes.ModuleView) control.ModuleState {
	said, ok := d.out.Said(v.Name)
	return control.StateOf(v, said, ok)
}

// runCalls runs the calls Do handed the loop during the batch just
// stabilized, so the control socket never reads a graph half-changed.
func (d *Daemon) runCalls() {
	for _, c := range d.calls {
		if c.ctx.Err() == nil {
			c.fn() // one whose caller gave up is not run (an outside audit: five abandoned drawings held the fills 16 s)
		}
		close(c.done)
	}
	d.calls = nil
}
