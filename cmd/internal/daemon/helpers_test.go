package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// mesh is one test's world: a real nats-server with JetStream, the
// provisioner's buckets and registry, a real fill server writing into a
// temp dir, and clients.
type mesh struct {
	t       testing.TB
	s       *server.Server
	again   func(*server.Options) // brings m.s back on its port and store
	nc      *nats.Conn
	js      jetstream.JetStream
	root    string
	sock    string
	tmpl    string
	fills   *fillLog
	logs    *bustest.Buffer
	cancel  []context.CancelFunc
	user    string    // the bus user the test connects as ("" for none)
	daemons []started // every client started, for settle
}

type fillLog struct {
	mu   sync.Mutex
	reqs []fill.Request
}

func (f *fillLog) add(r fill.Request) { f.mu.Lock(); f.reqs = append(f.reqs, r); f.mu.Unlock() }

// paths lists the paths of every request since from, in order.
func (f *fillLog) since(from int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.reqs[min(from, len(f.reqs)):] {
		for _, x := range r.Files {
			out = append(out, x.Path)
		}
	}
	return out
}

func (f *fillLog) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.reqs) }

func newMesh(t testing.TB) *mesh {
	t.Helper()
	return newMeshOn(t, nil, "")
}

// newMeshOn is newMesh on a server whose options tweak sets (nil: the
// defaults), the test connecting as user (with its dev password of
// examples/nats/server.conf).
func newMeshOn(t testing.TB, tweak func(*server.Options), user string) *mesh {
	t.Helper()
	if tweak == nil {
		tweak = func(*server.Options) {}
	}
	// A port below the ephemeral range (bustest.FreePort): tests stop the
	// server and start it again on its port, and an ephemeral one (Port
	// -1) could be taken meanwhile as the local port of any outgoing
	// connection on the machine, the client's reconnects included; the
	// restart then failed "nats-server not ready within 10s".
	port := bustest.FreePort(t)
	s := bustest.Start(t, func(o *server.Options) { o.Port = port }, tweak)
	same := bustest.Same(s)
	again := func(o *server.Options) { tweak(o); same(o) }
	m := &mesh{t: t, s: s, again: again, fills: &fillLog{}, logs: &bustest.Buffer{}, user: user}
	t.Cleanup(func() {
		for _, c := range m.cancel {
			c()
		}
	})
	m.connect()
	m.provision(1)
	return m
}

// newBareMesh is newMesh on a bus holding no bucket, registry or object
// store at all (as before the server and the lab made theirs); the fill
// server is running.
func newBareMesh(t testing.TB) *mesh {
	t.Helper()
	s := bustest.Start(t)
	m := &mesh{t: t, s: s, again: bustest.Same(s), fills: &fillLog{}, logs: &bustest.Buffer{}}
	t.Cleanup(func() {
		for _, c := range m.cancel {
			c()
		}
	})
	m.connect()
	m.fillUnder()
	return m
}

// provisionBus makes the provisioner's buckets, replicas each, and its
// registry, as the server does, and the assignments and config buckets the
// operator's tools make.
func provisionBus(t testing.TB, js jetstream.JetStream, replicas int) {
	t.Helper()
	ctx := context.Background()
	if err := srv.EnsureBuckets(ctx, js, replicas); err != nil {
		t.Fatal(err)
	}
	reg, _ := js.KeyValue(ctx, spec.RegistryBucket)
	if _, _, err := srv.PublishRegistry(ctx, reg, srv.Registry()); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{spec.AssignmentsBucket, spec.ConfigBucket} {
		if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, Replicas: replicas}); err != nil {
			t.Fatalf("bucket %s: %v", b, err)
		}
	}
}

// provision readies m's bus (provisionBus) and starts the fill server
// writing under a temporary root.
func (m *mesh) provision(replicas int) {
	m.t.Helper()
	provisionBus(m.t, m.js, replicas)
	m.fillUnder()
}

// fillUnder starts the fill server writing under a temporary root, and
// makes the directory test archives are written to.
func (m *mesh) fillUnder() {
	m.t.Helper()
	dir, err := os.MkdirTemp("", "prov") // short: unix socket paths are limited
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { os.RemoveAll(dir) })
	m.root, m.tmpl, m.sock = filepath.Join(dir, "root"), filepath.Join(dir, "templates"), filepath.Join(dir, "fill.sock")
	os.MkdirAll(m.root, 0o755)
	os.MkdirAll(m.tmpl, 0o755)
	m.startFill()
}

func (m *mesh) connect() {
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
	if m.user != "" {
		opts = append(opts, nats.UserInfo(m.user, "dev-only-"+m.user))
	}
	m.nc, m.js = bustest.JetStream(m.t, m.s, opts...)
}

func (m *mesh) startFill() {
	fs := &fill.Server{Root: m.root, OnRequest: m.fills.add, Command: []string{"true"}}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = append(m.cancel, cancel)
	go fs.Serve(ctx, m.sock)
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if _, err := os.Stat(m.sock); err != nil {
			return err
		}
		return nil
	})
}

func (m *mesh) bucket(name string) jetstream.KeyValue {
	return bustest.Bucket(m.t, m.js, name)
}

func (m *mesh) kv(name string) jetstream.KeyValue {
	kv, err := m.js.KeyValue(context.Background(), name)
	if err != nil {
		m.t.Fatal(err)
	}
	return kv
}

func (m *mesh) put(bucket, key, value string) {
	m.t.Helper()
	if _, err := m.kv(bucket).Put(context.Background(), key, []byte(value)); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mesh) del(bucket, key string) {
	m.t.Helper()
	if err := m.kv(bucket).Delete(context.Background(), key); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mesh) get(bucket, key string) (string, bool) {
	e, err := m.kv(bucket).Get(context.Background(), key)
	if err != nil {
		return "", false
	}
	return string(e.Value()), true
}

// archive writes a tar.gz of files and returns its file:// ref and digest.
func (m *mesh) archive(name string, files map[string]string) (string, string) {
	members := map[string][]byte{}
	for n, text := range files {
		members[n] = []byte(text)
	}
	data, digest, err := scale.TarGz(members)
	if err != nil {
		m.t.Fatal(err)
	}
	p := filepath.Join(m.tmpl, name+".tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		m.t.Fatal(err)
	}
	return "file://" + p, digest
}

// assign puts an assignment whose templates are files, in an archive.
func (m *mesh) assign(node, module string, p nodes.Plan, templates map[string]string) {
	m.t.Helper()
	if len(templates) > 0 {
		p.Templates.Ref, p.Templates.Digest = m.archive(node+"-"+module, templates)
	}
	b, _ := json.Marshal(nodes.Assignment{Node: node, Module: module, Provisioning: p})
	m.put(spec.AssignmentsBucket, spec.EncodeKey(node, module), string(b))
}

type clientOpt func(*Config)

// client starts node's daemon; it stops with the test.
func (m *mesh) client(node string, opts ...clientOpt) *Daemon {
	m.t.Helper()
	d, _ := m.startClient(node, opts...)
	return d
}

// startClient starts node's daemon and says what stops it (and waits for
// it to end); it stops with the test if not before.
func (m *mesh) startClient(node string, opts ...clientOpt) (*Daemon, func()) {
	m.t.Helper()
	cfg := Config{
		Node: node, Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock,
		StateDir: m.t.TempDir(), Refill: time.Hour, Recheck: 100 * time.Millisecond,
		VaultTimeout: 300 * time.Millisecond, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Log: zerolog.New(m.logs),
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	stop := func() { cancel(); <-done }
	m.t.Cleanup(stop)
	m.daemons = append(m.daemons, started{d, done})
	return d, stop
}

// file reads a filled file under the fill server's root.
func (m *mesh) file(path string) (string, os.FileMode, error) {
	p := filepath.Join(m.root, path)
	b, err := os.ReadFile(p)
	if err != nil {
		return "", 0, err
	}
	st, err := os.Stat(p) // it may be gone since (a removal between the two)
	if err != nil {
		return "", 0, err
	}
	return string(b), st.Mode().Perm(), nil
}

func (m *mesh) waitFile(path, want string) {
	m.t.Helper()
	m.waitFileFor(path, want, 10*time.Second)
}

// waitFileFor waits up to d for the file at path to hold want.
func (m *mesh) waitFileFor(path, want string, d time.Duration) {
	m.t.Helper()
	bustest.Eventually(m.t, d, func() error {
		got, _, err := m.file(path)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s is %q, want %q", path, got, want)
		}
		return nil
	})
}

// report reads node.module's report from the applied bucket.
func (m *mesh) report(node, module string) (map[string]any, bool) {
	v, ok := m.get(spec.AppliedBucket, spec.EncodeKey(node, module))
	if !ok {
		return nil, false
	}
	var r map[string]any
	json.Unmarshal([]byte(v), &r)
	return r, true
}

func (m *mesh) waitState(node, module, state string) map[string]any {
	m.t.Helper()
	return m.waitStateFor(node, module, state, 10*time.Second)
}

// waitStateFor is waitState with its own wait, for work that takes long
// under -race on a loaded machine.
func (m *mesh) waitStateFor(node, module, state string, d time.Duration) map[string]any {
	m.t.Helper()
	var r map[string]any
	bustest.Eventually(m.t, d, func() error {
		var ok bool
		r, ok = m.report(node, module)
		if !ok {
			return fmt.Errorf("no report for %s.%s", node, module)
		}
		if r["state"] != state {
			b, _ := json.Marshal(r)
			return fmt.Errorf("report %s", b)
		}
		return nil
	})
	return r
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
