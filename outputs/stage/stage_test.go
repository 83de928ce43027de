package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// views is a fixed set of module views.
type views map[string]*nodes.ModuleView

func (v views) View(module string) *nodes.ModuleView { return v[module] }

// rig is a stage writing through a real fill socket into root and a real
// bus with the needs, applied and collect buckets.
type rig struct {
	t     *testing.T
	root  string
	nc    *nats.Conn
	js    jetstream.JetStream
	fills chan fill.Request
	log   *bustest.Buffer // the stage's log
	s     *Stage
}

func newRig(t *testing.T, tweak ...func(*server.Options)) *rig {
	t.Helper()
	nc, js := bustest.JetStream(t, bustest.Start(t, tweak...))
	for _, b := range []string{"mesh-provisioner_needs", "mesh-provisioner_applied", "mesh-provisioner_collect"} {
		if _, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: b}); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "stage") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &rig{t: t, root: filepath.Join(dir, "root"), nc: nc, js: js, fills: make(chan fill.Request, 16),
		log: &bustest.Buffer{}}
	os.MkdirAll(r.root, 0o755)
	sock := filepath.Join(dir, "fill.sock")
	fs := &fill.Server{Root: r.root, Command: []string{"true"}, OnRequest: func(req fill.Request) { r.fills <- req }}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fs.Serve(ctx, sock)
	bustest.Eventually(t, 5*time.Second, func() error { _, err := os.Stat(sock); return err })
	r.s, err = New(Config{Node: "n1", Key: []byte("k"),
		Fill: &fill.Client{Socket: sock, Timeout: 5 * time.Second},
		Pub:  &report.Publisher{NC: nc, JS: js, Node: "n1"}, Log: zerolog.New(r.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.s.Stop)
	return r
}

// send is Send, then what it sent taken back in as the daemon's loop does
// (Land, Send), until nothing is in flight.
func (r *rig) send(ctx context.Context, v Views, names []string, all bool) {
	r.t.Helper()
	r.s.Send(ctx, v, names, all)
	for r.s.InFlight() > 0 {
		select {
		case d := <-r.s.Back():
			r.s.Land(d)
		case <-time.After(10 * time.Second):
			r.t.Fatalf("%d requests still in flight", r.s.InFlight())
		}
		r.s.Send(ctx, v, nil, false)
	}
	r.settle()
}

// settle waits for the reports' puts: Send does not wait for them, so
// what the bucket holds is read once they are acknowledged (or lost).
func (r *rig) settle() {
	r.t.Helper()
	if !r.s.cfg.Pub.Settle(10 * time.Second) {
		r.t.Fatal("report puts still awaiting their acks")
	}
}

func (r *rig) get(bucket, key string) (string, bool) {
	e, err := r.js.KeyValue(context.Background(), bucket)
	if err != nil {
		r.t.Fatal(err)
	}
	v, err := e.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return string(v.Value()), true
}

// fillCount drains the fill requests seen so far.
func (r *rig) fillCount() int {
	n := 0
	for {
		select {
		case <-r.fills:
			n++
		default:
			return n
		}
	}
}

func owned(path, content string, secret bool) *nodes.FileValue {
	return nodes.NewFileValue(&nodes.FileSpec{Path: path, Form: fill.FormOwned, Mode: "0640"}, []byte(content), secret)
}

func TestSendFillsReportsAndRemoves(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	conf, key := owned("/etc/web.conf", "port 80\n", false), owned("/etc/web.key", "hunter2", true)
	v := &nodes.ModuleView{Name: "web", State: graph.Ready,
		Files: []nodes.FileView{ready(conf), ready(key)},
		Items: []nodes.ItemView{{Collection: "hosts", State: graph.Ready, Text: []byte("10.0.0.1 web")}},
		Needs: []nodes.NeedView{{Kind: "vault", Name: "tls", State: graph.Ready}}}
	mesh := views{"web": v}

	r.send(ctx, mesh, []string{"web"}, false)
	if b, err := os.ReadFile(filepath.Join(r.root, "etc/web.conf")); err != nil || string(b) != "port 80\n" {
		t.Fatalf("web.conf: %q, %v", b, err)
	}
	val, ok := r.get("mesh-provisioner_applied", "n1.web")
	if !ok {
		t.Fatal("no report")
	}
	var rep report.Report
	json.Unmarshal([]byte(val), &rep)
	if rep.State != "applied" || len(rep.Files) != 2 {
		t.Fatalf("report %s", val)
	}
	if rep.Files[1].Digest != secretDigest([]byte("k"), "/etc/web.key", []byte("hunter2")) || strings.Contains(val, "hunter2") {
		t.Errorf("the secret-bearing file's digest is not keyed: %s", val)
	}
	if !strings.HasPrefix(rep.Files[0].Digest, "sha256:") {
		t.Errorf("a plain file's digest %q", rep.Files[0].Digest)
	}
	if _, ok := r.get("mesh-provisioner_needs", "n1.web.vault.tls"); !ok {
		t.Error("need not written")
	}
	if _, ok := r.get("mesh-provisioner_collect", "n1.hosts.web"); !ok {
		t.Error("item not written")
	}
	if said, ok := r.s.Said("web"); !ok || said.State != "applied" || said.Failure != "" {
		t.Errorf("said %+v, %v", said, ok)
	}
	if n := r.fillCount(); n != 1 {
		t.Errorf("%d fill requests, want 1", n)
	}

	// Nothing changed: no fill; all: every file again.
	r.send(ctx, mesh, []string{"web"}, false)
	if n := r.fillCount(); n != 0 {
		t.Errorf("%d fill requests for nothing changed", n)
	}
	r.send(ctx, mesh, []string{"web"}, true)
	if n := r.fillCount(); n != 1 {
		t.Errorf("%d fill requests for a full send, want 1", n)
	}

	r.s.Removed(ctx, "web")
	for _, k := range []struct{ bucket, key string }{
		{"mesh-provisioner_applied", "n1.web"}, {"mesh-provisioner_needs", "n1.web.vault.tls"}, {"mesh-provisioner_collect", "n1.hosts.web"},
	} {
		if v, ok := r.get(k.bucket, k.key); ok {
			t.Errorf("%s %s still holds %s after removal", k.bucket, k.key, v)
		}
	}
	if _, ok := r.s.Said("web"); ok {
		t.Error("a removed module is still remembered")
	}
}

func TestAFailedFillIsRetried(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	bad := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/x", Form: "nonsense"}, []byte("x"), false)
	mesh := views{"web": {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(bad)}}}
	var fills []error
	r.s.cfg.OnFill = func(_ time.Duration, err error) { fills = append(fills, err) }
	var moves []string
	r.s.cfg.OnState = func(was, now string) { moves = append(moves, was+"→"+now) }

	r.send(ctx, mesh, []string{"web"}, false)
	if fmt.Sprint(moves) != "[→failed]" {
		t.Errorf("OnState heard %v, want [→failed]", moves)
	}
	said, _ := r.s.Said("web")
	if said.State != "failed" || !strings.Contains(said.Failure, "nonsense") {
		t.Fatalf("said %+v after a refused fill", said)
	}
	if len(fills) != 1 || fills[0] == nil {
		t.Errorf("OnFill heard %v, want one failure", fills)
	}
	if got := r.s.Retrying(); len(got) != 1 || got[0] != "web" {
		t.Errorf("retrying %v, want [web]", got)
	}
	if got := r.s.States(); got["failed"] != 1 || got["applied"] != 0 {
		t.Errorf("states %v", got)
	}
	val, _ := r.get("mesh-provisioner_applied", "n1.web")
	if !strings.Contains(val, `"state":"failed"`) {
		t.Errorf("report %s, want failed", val)
	}
	r.s.Removed(ctx, "web")
	if fmt.Sprint(moves) != "[→failed failed→]" {
		t.Errorf("OnState heard %v, want the module to leave failed once removed", moves)
	}
}
