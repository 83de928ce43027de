package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Faults survived (docs/RELIABILITY.md): each test breaks one real part —
// the bus, the vault, the fill socket, the client itself — while values
// move, and checks the client converges without needless work.

// faultFill is a fill server of the test's own, on its own socket, that
// can be stopped and started again. It serves the real fill.Server's
// handler, counting the requests under way. Its requests go to m.fills; each
// program restart or reload takes slow and then is a line in f.restarts.
type faultFill struct {
	m        *mesh
	sock     string
	restarts string
	slow     time.Duration
	inflight atomic.Int32 // fill requests being handled now
	cancel   func()
	done     chan struct{}
}

func (m *mesh) faultFill(slow time.Duration) *faultFill {
	m.t.Helper()
	dir := filepath.Dir(m.sock)
	f := &faultFill{m: m, sock: filepath.Join(dir, "fault-fill.sock"), restarts: filepath.Join(dir, "restarts.log"), slow: slow}
	m.t.Cleanup(f.stop)
	f.start()
	return f
}

func (f *faultFill) start() {
	f.m.t.Helper()
	fs := &fill.Server{Root: f.m.root, OnRequest: f.m.fills.add,
		Command: []string{"sh", "-c", fmt.Sprintf(`sleep %.3f; echo "$0 $1" >> %s`, f.slow.Seconds(), f.restarts)}}
	os.Remove(f.sock)
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		f.m.t.Fatal(err)
	}
	h := fs.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.inflight.Add(1)
		defer f.inflight.Add(-1)
		h.ServeHTTP(w, r)
	})}
	f.done = make(chan struct{})
	go func() { defer close(f.done); srv.Serve(ln) }()
	f.cancel = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
}

// stop shuts the fill server down (its socket removed) and waits.
func (f *faultFill) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
	f.cancel = nil
}

// programRestarts counts the program restarts and reloads run so far.
func (f *faultFill) programRestarts() int {
	b, _ := os.ReadFile(f.restarts)
	return strings.Count(string(b), "\n")
}

func (f *faultFill) socket(c *Config) { c.FillSocket = f.sock }

// fillsPerPath counts, per path, the fill requests since request from.
func (m *mesh) fillsPerPath(from int) map[string]int {
	out := map[string]int{}
	for _, p := range m.fills.since(from) {
		out[p]++
	}
	return out
}

// statesOf records every state the prov.applied event of node.module says.
func (m *mesh) statesOf(node, module string) func() []string {
	m.t.Helper()
	var mu sync.Mutex
	var states []string
	sub, err := m.nc.Subscribe("prov.applied."+node+"."+module, func(msg *nats.Msg) {
		var r struct{ State string }
		json.Unmarshal(msg.Data, &r)
		mu.Lock()
		states = append(states, r.State)
		mu.Unlock()
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	m.t.Cleanup(func() { sub.Unsubscribe() })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), states...) }
}

// How long the bus is away and the vault silent: as long as issue 10
// says (longer than a watcher's heartbeat detection, 10–15 s); -short
// makes them brief for a quick run.
func outage(full, short time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return full
}

// The bus goes away and, while the client cannot reach it, values change:
// the server is stopped, started on the same store dir on another port
// (where the client does not look) to take the writes, stopped again and
// started on its own port. The client converges to the current values
// with one full refill, and sends no file more often than that refill and
// its change need.
func TestTheBusGoneWhileValuesChangeBehindItConvergesWithoutNeedlessFills(t *testing.T) {
	t.Parallel() // it lasts half a minute: let it overlap the other long one
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	m.waitState("ace", "web", "applied")
	from := m.fills.count()

	bustest.Stop(m.s)
	m.s = bustest.Start(t, m.again, func(o *server.Options) { o.Port = -1 }) // same store, another port
	m.connect()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.put(spec.ConfigBucket, "ace.web.model", "sonnet")
	bustest.Stop(m.s)
	time.Sleep(outage(30*time.Second, 300*time.Millisecond)) // the client keeps trying its own port meanwhile
	m.s = bustest.Start(t, m.again)
	m.connect()

	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitFile("/etc/web/a.conf", "model = sonnet\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	m.settle()
	got := m.fillsPerPath(from)
	t.Logf("fills per path after the bus came back: %v", got)
	// One full refill on reconnect sends each file once, and the changed
	// files may be sent once more if their change arrives after it.
	for _, p := range []string{"/etc/web/a.conf", "/etc/web/c.conf"} {
		if got[p] < 1 || got[p] > 2 {
			t.Errorf("%s sent %d times after the bus came back, want 1 or 2", p, got[p])
		}
	}
	if got["/etc/web/b.conf"] > 1 {
		t.Errorf("/etc/web/b.conf, unchanged, sent %d times after the bus came back, want at most the one refill", got["/etc/web/b.conf"])
	}
}

// The vault is silent for a while: the module that needs a secret waits
// (never failed) and is asked again with backoff, another module of the
// node is applied meanwhile; the vault back, the same client applies it.
func TestAVaultSilentForAWhileLeavesModulesWaitingAndItsReturnApplies(t *testing.T) {
	t.Parallel() // it lasts a minute: let it overlap the other long one
	m := newMesh(t)
	m.webModule()
	m.assign("ace", "sec", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/sec/key.conf", Template: "k"}},
		Secrets: []nodes.SecretSpec{{Name: "api-key"}},
	}, map[string]string{"k": "key = ${secret:api-key}\n"})
	v := devvault.New(zerolog.New(m.logs))
	if err := v.Start(m.nc, m.js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	v.Set(t.Context(), "own/sec/api-key", []byte("k-1"))
	v.SetSilent(true)
	states := m.statesOf("ace", "sec")
	d := m.client("ace")

	m.waitState("ace", "web", "applied")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "sec")
		if w := fmt.Sprint(r["waiting"]); r["state"] != "waiting" || !contains(w, "own/sec/api-key") || !contains(w, "no answer within") {
			return fmt.Errorf("report %v does not say the vault is silent", r)
		}
		return nil
	})
	silentFor := outage(time.Minute, 1500*time.Millisecond)
	time.Sleep(silentFor)
	if n := v.AskCount("own/sec/api-key"); n < 3 {
		t.Fatalf("asked %d times in %v of silence, want asks again with backoff", n, silentFor)
	}
	if _, _, err := m.file("/etc/sec/key.conf"); err == nil {
		t.Fatal("a file of a waiting module was written")
	}
	v.SetSilent(false)
	m.waitFile("/etc/sec/key.conf", "key = k-1\n")
	m.waitState("ace", "sec", "applied")
	for _, s := range states() {
		if s == "failed" {
			t.Fatalf("a silent vault failed the module: states %v", states())
		}
	}
	if !d.ready.Load() {
		t.Fatal("the client is not ready")
	}
	// The other module went on untouched.
	if r, _ := m.report("ace", "web"); r["state"] != "applied" {
		t.Fatalf("web: %v", r)
	}
}

// The fill socket goes down: the module's report says failed with the
// socket's reason; the socket back, the file is filled at the next retry
// tick, without a further change.
func TestAFillSocketDownFailsWithItsReasonAndIsFilledWhenBack(t *testing.T) {
	m := newMesh(t)
	f := m.faultFill(0)
	m.webModule()
	m.client("ace", f.socket)
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	m.waitState("ace", "web", "applied")

	f.stop()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	r := m.waitState("ace", "web", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "fill socket") || !contains(why, f.sock) || !contains(why, "not answering") {
		t.Fatalf("reason %q does not say the fill socket does not answer", why)
	}
	if got, _, _ := m.file("/etc/web/c.conf"); got != "flavour = vanilla\n" {
		t.Fatalf("c.conf %q while the socket was down", got)
	}
	time.Sleep(300 * time.Millisecond) // a few retry ticks against a dead socket

	f.start()
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitState("ace", "web", "applied")
}

// A value flaps: 1,000 puts within about a second. The client's batches
// coalesce them, and a module is filled at most once per fill gap however
// fast the machine: far fewer fills than changes, each restarting the
// program at most once, and the file ends at the last value.
func TestAFlappingValueCoalescesIntoFewFillsAndRestarts(t *testing.T) {
	const puts = 1000
	m := newMesh(t)
	f := m.faultFill(0)
	m.put(spec.ConfigBucket, "ace.flap.v", "0")
	m.assign("ace", "flap", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/flap/app.conf", Template: "t",
		OnChange: nodes.OnChange{Action: "restart", Unit: "flap.service"}}}},
		map[string]string{"t": "v = ${config:v}\n"})
	m.client("ace", f.socket)
	m.waitFile("/etc/flap/app.conf", "v = 0\n")
	m.waitState("ace", "flap", "applied")
	from, restarts0 := m.fills.count(), f.programRestarts()

	// Published without waiting for each ack, so the 1,000 changes fit in
	// about a second even under -race.
	subject := "$KV." + spec.ConfigBucket + ".ace.flap.v"
	start := time.Now()
	for i := 1; i <= puts; i++ {
		if _, err := m.js.PublishAsync(subject, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / puts)); wait > 0 {
			time.Sleep(wait)
		}
	}
	select {
	case <-m.js.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		t.Fatal("puts not acknowledged")
	}
	took := time.Since(start)
	m.waitFile("/etc/flap/app.conf", fmt.Sprintf("v = %d\n", puts))
	m.waitState("ace", "flap", "applied")
	m.settle()
	fills := m.fillsPerPath(from)["/etc/flap/app.conf"]
	restarts := f.programRestarts() - restarts0
	t.Logf("%d puts in %v: %d fills, %d program restarts", puts, took.Round(time.Millisecond), fills, restarts)
	if fills < 1 || fills > puts/4 {
		t.Errorf("%d fills for %d changes: want them coalesced to at most %d", fills, puts, puts/4)
	}
	// the last fill comes at most a gap and a fill after the last put
	if most := int((took+100*time.Millisecond)/DefaultFillGap) + 1; fills > most {
		t.Errorf("%d fills in %v: more than one per %v gap (%d)", fills, took, DefaultFillGap, most)
	}
	if restarts > fills {
		t.Errorf("%d program restarts for %d fills: at most one per fill", restarts, fills)
	}
}

// faultChildEnv, when set in a child's environment, makes TestFaultChildClient
// run a client (its value is the JSON of faultChildConfig) until it is killed.
const faultChildEnv = "MESH_FAULT_CHILD"

type faultChildConfig struct {
	Node, URL, Socket, StateDir string
}

// TestFaultChildClient is not a test: it is the body of the client process
// TestAClientKilledMidFillConvergesAndNoHalfFileIsSeen starts and kills.
func TestFaultChildClient(t *testing.T) {
	raw := os.Getenv(faultChildEnv)
	if raw == "" {
		t.Skip("runs only as a child of TestAClientKilledMidFillConvergesAndNoHalfFileIsSeen")
	}
	var c faultChildConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	d, err := New(Config{Node: c.Node, Bus: bus.Options{URL: c.URL}, FillSocket: c.Socket, StateDir: c.StateDir,
		Refill: time.Hour, Recheck: 100 * time.Millisecond, Log: zerolog.New(os.Stderr).With().Timestamp().Logger()})
	if err != nil {
		t.Fatal(err)
	}
	d.Run(context.Background()) // until SIGKILL
}

// The client is killed with SIGKILL at random points while it fills large
// files whose value keeps changing, and started again on the same state
// dir, four times. A reader polls the files all along: every read is one
// whole version, never a half-written file. The last client converges.
func TestAClientKilledMidFillConvergesAndNoHalfFileIsSeen(t *testing.T) {
	const reps = 400 // placeholders per file: 200 KiB files
	m := newMesh(t)
	value := func(i int) string { return fmt.Sprintf("%05d", i) + strings.Repeat("x", 500) }
	render := func(v string) string { return strings.Repeat("line "+v+"\n", reps) }
	tmpl := strings.Repeat("line ${config:v}\n", reps)
	paths := []string{"/data/big/f1", "/data/big/f2", "/data/big/f3"}
	p := nodes.Plan{}
	templates := map[string]string{}
	for i, path := range paths {
		name := fmt.Sprint("t", i)
		p.Files = append(p.Files, nodes.FileSpec{Path: path, Template: name,
			OnChange: nodes.OnChange{Action: "restart", Unit: "big.service"}})
		templates[name] = tmpl
	}
	m.put(spec.ConfigBucket, "ace.big.v", value(0))
	m.assign("ace", "big", p, templates)
	// Each fill restarts big.service, which takes 100 ms: a kill soon
	// after a fill request arrived lands while it is under way.
	f := m.faultFill(100 * time.Millisecond)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(faultChildConfig{Node: "ace", URL: m.s.ClientURL(), Socket: f.sock, StateDir: t.TempDir()})
	var outMu sync.Mutex
	var out strings.Builder
	start := func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^TestFaultChildClient$", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), faultChildEnv+"="+string(cfg))
		w := &faultLockedWriter{mu: &outMu, w: &out}
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}

	// The reader: every read must be one whole rendered version.
	stop := make(chan struct{})
	var reads, bad int
	var badSample string
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, path := range paths {
				b, err := os.ReadFile(filepath.Join(m.root, path))
				if err != nil {
					continue // not filled yet
				}
				reads++
				time.Sleep(time.Millisecond) // leave the cores to the clients
				s := string(b)
				first, _, _ := strings.Cut(s, "\n")
				if s != strings.Repeat(first+"\n", reps) {
					bad++
					badSample = fmt.Sprintf("%s: %d bytes", path, len(b))
				}
			}
		}
	}()
	// The writer: a new value every 30 ms.
	last := 0
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			if _, err := m.js.Publish(t.Context(), "$KV."+spec.ConfigBucket+".ace.big.v", []byte(value(i))); err == nil {
				last = i
			}
		}
	}()

	// Four clients in turn, each killed with SIGKILL once it has sent a
	// fill or two, at a varying point of the fill under way.
	kills, midFill := 0, 0
	for r := range 4 {
		c := start()
		n0 := m.fills.count()
		bustest.Eventually(m.t, 15*time.Second, func() error {
			if n := m.fills.count(); n < n0+1+r%2 {
				return fmt.Errorf("client %d: %d fills so far", r, n-n0)
			}
			return nil
		})
		time.Sleep(time.Duration(r) * 15 * time.Millisecond)
		if f.inflight.Load() > 0 {
			midFill++
		}
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		kills++
	}
	close(stop)
	<-writerDone
	<-readerDone
	fillsBefore := m.fills.count()
	t0 := time.Now()
	start()
	want := render(value(last))
	bustest.Eventually(m.t, 20*time.Second, func() error {
		for _, path := range paths {
			if got, _, err := m.file(path); err != nil || got != want {
				return fmt.Errorf("%s not at the last value %d (%v)", path, last, err)
			}
		}
		return nil
	})
	m.waitState("ace", "big", "applied")
	t.Logf("last client converged in %v", time.Since(t0))
	if os.Getenv("FAULT_DEBUG") != "" {
		outMu.Lock()
		t.Log(out.String())
		outMu.Unlock()
	}
	t.Logf("%d kills (%d mid-fill), %d fill requests while killing, %d reads, last value %d", kills, midFill, fillsBefore, reads, last)
	if bad > 0 {
		outMu.Lock()
		defer outMu.Unlock()
		t.Fatalf("%d of %d reads saw a half-written file (e.g. %s)", bad, reads, badSample)
	}
	if reads == 0 || midFill < kills/2 {
		t.Fatalf("the run proved nothing: %d reads, %d fills for %d kills, %d mid-fill", reads, fillsBefore, kills, midFill)
	}
	if entries, _ := os.ReadDir(filepath.Join(m.root, "data/big")); len(entries) != len(paths) {
		t.Errorf("temp files left: %d entries", len(entries))
	}
}

type faultLockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *faultLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
