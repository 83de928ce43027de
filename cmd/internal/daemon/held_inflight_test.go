package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// gatedFill is a real fill server on its own socket whose requests wait,
// while the gate is shut, until it is opened; each request that reaches
// a shut gate is said on reached.
type gatedFill struct {
	sock    string
	mu      sync.Mutex
	open    chan struct{} // nil: the gate is open
	reached chan string
}

func (m *mesh) gatedFill() *gatedFill {
	m.t.Helper()
	g := &gatedFill{sock: filepath.Join(filepath.Dir(m.sock), "gated.sock"), reached: make(chan string, 16)}
	fs := &fill.Server{Root: m.root, Command: []string{"true"}, OnRequest: func(r fill.Request) {
		m.fills.add(r)
		g.mu.Lock()
		open := g.open
		g.mu.Unlock()
		if open != nil {
			g.reached <- r.Module
			<-open
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = append(m.cancel, cancel)
	go fs.Serve(ctx, g.sock)
	bustest.Eventually(m.t, 5*time.Second, func() error { _, err := os.Stat(g.sock); return err })
	m.t.Cleanup(g.let)
	return g
}

func (g *gatedFill) socket(c *Config) { c.FillSocket = g.sock }

// shut makes the requests from now on wait for let.
func (g *gatedFill) shut() { g.mu.Lock(); g.open = make(chan struct{}); g.mu.Unlock() }

// let opens the gate: the requests waiting go on.
func (g *gatedFill) let() {
	g.mu.Lock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	g.mu.Unlock()
}

// A module whose new plan comes to read a provider's bucket no plan of
// the node read yet, while a fill of it (touched again while in flight)
// is with the node-engine, is never said to wait: the binding was
// written all along. The daemon holds it until its first read of the
// bucket (nodes.HoldUnread), and the stage sends nothing of it on its own
// meanwhile (stage.Config.Held): not the fill back, touched in flight,
// again with the view that says "not read yet". It ends applied with the
// bound value in its file. Before, the fill back was sent again at once:
// its module was reported waiting ("not read yet") and its need put
// waiting, and a moment later applied and met.
//
// The fill is let go once the client asks for the bucket's consumer (the
// plan taken in, the module held), and must be back before the bucket's
// first read is: the bucket holds 2,000 other keys of the node, so that
// read takes a while (with none, the fill came back first once in eight
// runs before the fix; with 300, eight in eight). The fix holds whatever
// the order, so the test cannot fail for timing once fixed, unless the
// read took over the daemon's 5 s hold (firstLookWait).
func TestAModuleComingToReadANewBucketWhileItsFillIsInFlightIsNeverSaidToWait(t *testing.T) {
	m := newMesh(t)
	g := m.gatedFill()
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.put(spec.ConfigBucket, "ace.cc.model", "opus")
	tmpl := map[string]string{"forge": "model = ${config:model}\n"}
	files := []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}}
	m.assign("ace", "cc", nodes.Plan{Files: files}, tmpl)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge"}}`)
	// Other keys under the node: the first read of the bucket takes a while.
	for i := range 2000 {
		if _, err := m.js.PublishAsync(fmt.Sprintf("$KV.gitea_bound.ace.other%d.x", i), []byte(`{"state":"bound","values":{}}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-m.js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Fatal("the bucket's keys were not all put")
	}
	changed, err := m.nc.SubscribeSync(spec.ChangedSubject("ace", "cc"))
	if err != nil {
		t.Fatal(err)
	}
	m.client("ace", g.socket)
	m.waitFile("/etc/cc/forge.toml", "model = opus\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	for {
		if _, err := changed.NextMsg(10 * time.Millisecond); err != nil {
			break // the start's prov.changed taken
		}
	}

	said := m.saidOf("ace", "cc")
	g.shut()
	m.put(spec.ConfigBucket, "ace.cc.model", "haiku")
	select {
	case <-g.reached: // cc's fill is in flight
	case <-time.After(20 * time.Second):
		t.Fatal("cc's fill did not reach the node-engine")
	}
	m.put(spec.ConfigBucket, "ace.cc.model", "sonnet") // touched while in flight
	for n := 0; n < 2; {
		if _, err := changed.NextMsg(20 * time.Second); err != nil {
			t.Fatalf("the client did not take in both config changes: %v", err)
		}
		n++
	}
	created := make(chan struct{}, 1)
	sub, err := m.nc.Subscribe("$JS.API.CONSUMER.CREATE.KV_gitea_bound.>", func(*nats.Msg) {
		select {
		case created <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.nc.Flush()
	m.assign("ace", "cc", nodes.Plan{Files: files,
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}},
		map[string]string{"forge": "model = ${config:model}\nurl = ${bound:gitea-read:url}\n"})
	select {
	case <-created: // the new plan is taken in: its bucket's first read is under way
	case <-time.After(20 * time.Second):
		t.Fatal("the client did not come to read gitea_bound")
	}
	g.let()
	m.waitFile("/etc/cc/forge.toml", "model = sonnet\nurl = https://forge\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	got := said()
	noneSays(t, got, `"state":"waiting"`)
	noneSays(t, got, "not read yet")
	boundMet(t, got)
}
