package stage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// engine is a real mesh-fill on a socket of its own, writing into the
// rig's root, which counts the fill requests it received by module.
type engine struct {
	t    *testing.T
	sock string
	root string
	mu   sync.Mutex
	got  map[string]int
	stop func()
	// allow: the uids it admits (fill.Server.AllowUIDs); log: its log.
	allow []int
	log   bustest.Buffer
	// command: its --on-change-command (nil: true, every program holds).
	command []string
}

func (r *rig) engine() *engine {
	e := &engine{t: r.t, sock: shortSock(r.t, "engine"), root: r.root, got: map[string]int{}}
	e.start()
	r.t.Cleanup(func() { e.stop() })
	r.s.cfg.Fill = &fill.Client{Socket: e.sock, Timeout: 5 * time.Second}
	return e
}

// refusingEngine is an engine whose --allow-uid admits another uid than
// this process's (every request answered 403), and how many connections
// it refused so far.
func (r *rig) refusingEngine() (*engine, func() int) {
	e := r.engine()
	e.stop()
	e.allow = []int{os.Getuid() + 1}
	e.start()
	return e, func() int { return strings.Count(e.log.String(), "fill socket: connection refused") }
}

func (e *engine) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	command := e.command
	if command == nil {
		command = []string{"true"}
	}
	srv := &fill.Server{Root: e.root, Command: command, Log: zerolog.New(&e.log), AllowUIDs: e.allow, OnRequest: func(req fill.Request) {
		e.mu.Lock()
		e.got[req.Module]++
		e.mu.Unlock()
	}}
	// Up once it says it listens: a connection made to see would be one
	// more refused by --allow-uid (answered 403 as it is accepted), and
	// counted among the requests refused.
	listening := strings.Count(e.log.String(), "fill socket listening")
	go func() { done <- srv.Serve(ctx, e.sock) }()
	bustest.Eventually(e.t, 30*time.Second, func() error {
		if strings.Count(e.log.String(), "fill socket listening") == listening {
			return fmt.Errorf("mesh-fill at %s not listening yet", e.sock)
		}
		return nil
	})
	e.stop = func() { cancel(); <-done; e.stop = func() {} }
}

// take is how many fill requests of module mesh-fill received since the
// last take.
func (e *engine) take(module string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.got[module]
	delete(e.got, module)
	return n
}

// clock is a test's time: the refusals' waits pass when it is moved.
type clock struct{ at time.Time }

func (c *clock) now() time.Time { return c.at }

// clocked gives the rig's stage a clock of the test's, and a retry tick
// of retry: the refusals' first wait.
func (r *rig) clocked(retry time.Duration) *clock {
	c := &clock{at: time.Now()}
	r.s.now, r.s.cfg.Retry = c.now, retry
	return c
}

// tick is the daemon's retry tick: what failed is sent again.
func (r *rig) tick(ctx context.Context, v Views) {
	r.t.Helper()
	r.send(ctx, v, r.s.Retrying(), false)
}

// mustSayFailed checks the module is said, and reported, failed with the
// node-engine's reason.
func (r *rig) mustSayFailed(module, reason string) {
	r.t.Helper()
	if said, _ := r.s.Said(module); said.State != "failed" || !strings.Contains(said.Reason, reason) {
		r.t.Fatalf("%s said %+v, want failed with %q", module, said, reason)
	}
	if val, _ := r.get("mesh-provisioner_applied", "n1."+module); !strings.Contains(val, `"state":"failed"`) || !strings.Contains(val, reason) {
		r.t.Fatalf("%s's report %s, want failed with %q", module, val, reason)
	}
}

// A request mesh-fill refuses (400: a form it does not know) is not sent
// again at every retry tick: the same request waits a tick, then two, four,
// eight, up to refusedMax, while the module stays failed with mesh-fill's
// reason. A change of the module, and a full send (the refill tick), send
// it at once.
func TestARefusedFillWaitsLongerAtEachRefusalButGoesAtOnceWhenTheModuleChanges(t *testing.T) {
	r := newRig(t)
	e := r.engine()
	ctx := context.Background()
	c := r.clocked(time.Second)
	at := func(content string) views {
		bad := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/x", Form: "nonsense"}, []byte(content), false)
		return views{"web": {Name: "web", State: graph.Ready, Plan: "p1", Files: []nodes.FileView{ready(bad)}}}
	}
	mesh := at("one")
	r.send(ctx, mesh, []string{"web"}, false)
	if n := e.take("web"); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	r.mustSayFailed("web", "nonsense")

	var sentAt []int
	for i := 1; i <= 16; i++ {
		c.at = c.at.Add(time.Second)
		r.tick(ctx, mesh)
		if n := e.take("web"); n > 0 {
			sentAt = append(sentAt, i)
		}
		r.mustSayFailed("web", "nonsense")
	}
	if fmt.Sprint(sentAt) != "[1 3 7 15]" {
		t.Errorf("over 16 ticks a second apart the refused request went at ticks %v, want [1 3 7 15]", sentAt)
	}

	// A change goes at once, and so does a full send.
	mesh = at("two")
	r.send(ctx, mesh, []string{"web"}, false)
	if n := e.take("web"); n != 1 {
		t.Errorf("a changed module: %d requests, want 1 at once", n)
	}
	r.tick(ctx, mesh)
	if n := e.take("web"); n != 0 {
		t.Errorf("the next tick sent the refused request again (%d)", n)
	}
	r.send(ctx, mesh, []string{"web"}, true)
	if n := e.take("web"); n != 1 {
		t.Errorf("a full send: %d requests, want 1 at once", n)
	}
	r.mustSayFailed("web", "nonsense")

	// The wait stops growing at refusedMax.
	for i := range 8 {
		c.at = c.at.Add(refusedMax)
		r.tick(ctx, mesh)
		if n := e.take("web"); n != 1 {
			t.Fatalf("tick %d, %s after the last: %d requests, want 1", i, refusedMax, n)
		}
	}
}

// A socket that does not answer is tried at every tick, as before; once
// it answers again, a request it refused before goes at once, its wait
// notwithstanding: the node-engine may have come back with another
// configuration.
func TestARefusedFillGoesAtOnceWhenTheSocketIsBack(t *testing.T) {
	r := newRig(t)
	e := r.engine()
	ctx := context.Background()
	c := r.clocked(time.Hour)
	var tries atomic.Int32 // OnFill is called from the stage's workers
	r.s.cfg.OnFill = func(time.Duration, error) { tries.Add(1) }
	bad := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/x", Form: "nonsense"}, []byte("x"), false)
	good := func(content string) *nodes.ModuleView {
		return &nodes.ModuleView{Name: "good", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(owned("/etc/good", content, false))}}
	}
	mesh := views{"bad": {Name: "bad", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(bad)}}, "good": good("one")}
	r.send(ctx, mesh, []string{"bad", "good"}, false)
	if n, m := e.take("bad"), e.take("good"); n != 1 || m != 1 {
		t.Fatalf("requests bad %d, good %d; want 1 each", n, m)
	}
	r.mustSayFailed("bad", "nonsense")

	e.stop()
	mesh["good"] = good("two")
	r.send(ctx, mesh, []string{"good"}, false)
	tries.Store(0)
	for range 3 {
		c.at = c.at.Add(time.Second)
		r.tick(ctx, mesh)
	}
	if n := tries.Load(); n != 3 {
		t.Errorf("a socket not answering: %d tries in 3 ticks, want one a tick (the refused module's none)", n)
	}
	r.mustSayFailed("good", "not answering")

	e.start()
	c.at = c.at.Add(time.Second)
	r.tick(ctx, mesh)
	if n, m := e.take("bad"), e.take("good"); n != 1 || m != 1 {
		t.Errorf("the socket back: requests bad %d, good %d; want 1 each at once", n, m)
	}
	mustHold(t, filepath.Join(r.root, "etc/good"), "two")
	r.mustSayFailed("bad", "nonsense")
}

// A request refused 409 because one of the node's modules holds the path
// goes again as soon as that module lets go: its DELETE answered (it left
// the node), or its whole request that no longer names the path.
func TestARequestRefusedForAPathHeldGoesAtOnceWhenItsHolderLetsGo(t *testing.T) {
	for _, how := range []string{"left", "dropped the path"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t)
			e := r.engine()
			ctx := context.Background()
			c := r.clocked(time.Hour)
			a := &nodes.ModuleView{Name: "a", State: graph.Ready, Plan: "a1", Files: []nodes.FileView{ready(owned("/etc/shared", "a's", false))}}
			b := &nodes.ModuleView{Name: "b", State: graph.Ready, Plan: "b1", Files: []nodes.FileView{ready(owned("/etc/shared", "b's", false))}}
			shared := filepath.Join(r.root, "etc/shared")
			r.send(ctx, views{"a": a}, []string{"a"}, false)
			mustHold(t, shared, "a's")
			mesh := views{"a": a, "b": b}
			r.send(ctx, mesh, []string{"b"}, false)
			r.mustSayFailed("b", "409")
			// Refused whole (1); the next lets go of what b holds but the path
			// (2: moduleOut.heldElsewhere); the next names it again, refused (3);
			// then nothing goes for an hour.
			for range 3 {
				c.at = c.at.Add(time.Second)
				r.tick(ctx, mesh)
			}
			if n := e.take("b"); n != 3 {
				t.Fatalf("b: %d requests in 3 ticks, want 3", n)
			}
			c.at = c.at.Add(time.Second)
			r.tick(ctx, mesh)
			if n := e.take("b"); n != 0 {
				t.Fatalf("b: %d requests refused as they were, want 0 before its wait passed", n)
			}
			r.mustSayFailed("b", "409")

			if how == "left" {
				delete(mesh, "a")
				r.s.Removed(ctx, "a")
			} else {
				mesh["a"] = &nodes.ModuleView{Name: "a", State: graph.Ready, Plan: "a2", Files: []nodes.FileView{ready(owned("/etc/a-only", "a's", false))}}
				r.s.Send(ctx, mesh, []string{"a"}, false)
			}
			r.send(ctx, mesh, nil, false) // the answers taken in, as the loop does: no tick
			mustHold(t, shared, "b's")
			if said, _ := r.s.Said("b"); said.State != "applied" {
				t.Errorf("b said %+v once a let go, want applied", said)
			}
		})
	}
}

// A removal mesh-fill refuses (403: the client's uid is not among those it
// admits) is not sent again at every retry tick either: it waits a tick,
// then two, four, ...; a full send sends it at once.
func TestARefusedRemovalWaitsLongerAtEachRefusal(t *testing.T) {
	r := newRig(t)
	e, refusals := r.refusingEngine()
	ctx := context.Background()
	c := r.clocked(time.Second)

	r.s.Remove(ctx, "old")
	r.send(ctx, views{}, nil, false)
	if n := refusals(); n != 1 {
		t.Fatalf("mesh-fill refused %d requests, want 1\n%s", n, e.log.String())
	}
	var sentAt []int
	for i := 1; i <= 16; i++ {
		c.at = c.at.Add(time.Second)
		was := refusals()
		r.s.RetryRemovals(ctx)
		r.send(ctx, views{}, nil, false)
		if refusals() > was {
			sentAt = append(sentAt, i)
		}
	}
	if fmt.Sprint(sentAt) != "[1 3 7 15]" {
		t.Errorf("over 16 ticks a second apart the refused DELETE went at ticks %v, want [1 3 7 15]", sentAt)
	}
	if got := r.s.Removing(); fmt.Sprint(got) != "[old]" {
		t.Errorf("removing %v, want [old]", got)
	}

	e.stop()
	e.allow = nil
	e.start()
	r.send(ctx, views{}, nil, true)
	if got := r.s.Removing(); len(got) != 0 {
		t.Errorf("removing %v after a full send to a mesh-fill that admits the client, want none", got)
	}
}

// A node-engine that hangs on one module's request at every tick (it times
// out) is not down: the requests it refused do not go again each time
// another module's is answered.
func TestARefusedFillWaitsWhileAnotherModulesFillTimesOutAtEveryTick(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.clocked(time.Hour)
	sock := shortSock(t, "hang")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	meshFill := (&fill.Server{Root: r.root, Log: zerolog.Nop(), OnRequest: func(req fill.Request) {
		mu.Lock()
		got[req.Module]++
		mu.Unlock()
	}}).Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, _ := io.ReadAll(hr.Body)
		if bytes.Contains(body, []byte(`"module":"slow"`)) {
			<-hr.Context().Done() // never answered
			return
		}
		hr.Body = io.NopCloser(bytes.NewReader(body))
		meshFill.ServeHTTP(w, hr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.s.cfg.Fill = &fill.Client{Socket: sock, Timeout: time.Second}
	taken := func(module string) int {
		mu.Lock()
		defer mu.Unlock()
		n := got[module]
		delete(got, module)
		return n
	}

	bad := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/x", Form: "nonsense"}, []byte("x"), false)
	mesh := views{"bad": {Name: "bad", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(bad)}}}
	module := func(name, content string) *nodes.ModuleView {
		return &nodes.ModuleView{Name: name, State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(owned("/etc/"+name, content, false))}}
	}
	mesh["slow"], mesh["good"] = module("slow", "0"), module("good", "0")
	r.send(ctx, mesh, []string{"bad", "slow", "good"}, false)
	if n := taken("bad"); n != 1 {
		t.Fatalf("bad: %d requests, want 1", n)
	}
	r.mustSayFailed("bad", "nonsense")
	r.mustSayFailed("slow", "not answering")
	for i := range 3 {
		c.at = c.at.Add(time.Second)
		mesh["good"] = module("good", fmt.Sprint(i+1))
		r.send(ctx, mesh, append(r.s.Retrying(), "good"), false)
		// good's fill has the same 1 s as slow's: on a loaded machine its
		// write's fsync may take longer, and it is then sent again at the
		// next tick, as a fill not answered is.
		for try := 0; try < 5 && !holds(filepath.Join(r.root, "etc/good"), fmt.Sprint(i+1)); try++ {
			c.at = c.at.Add(time.Second)
			r.tick(ctx, mesh)
		}
		mustHold(t, filepath.Join(r.root, "etc/good"), fmt.Sprint(i+1))
	}
	if n := taken("bad"); n != 0 {
		t.Errorf("bad: %d requests in 3 ticks while slow's timed out and good's were answered, want 0", n)
	}
	r.mustSayFailed("bad", "nonsense")
}

// holds says whether the file at p holds want.
func holds(p, want string) bool {
	b, err := os.ReadFile(p)
	return err == nil && string(b) == want
}

// A module whose files together are over what a request may carry is not
// rendered and tried again at every tick either: the client's refusal
// waits as the node-engine's does.
func TestAFillTooLargeToSendWaitsAsARefusedOne(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.clocked(time.Second)
	var tries atomic.Int32
	r.s.cfg.OnFill = func(time.Duration, error) { tries.Add(1) }
	big := bytes.Repeat([]byte("v"), 16<<20)
	var files []nodes.FileView
	for i := range 5 {
		files = append(files, ready(nodes.NewFileValue(&nodes.FileSpec{Path: fmt.Sprintf("/big%d", i), Form: fill.FormOwned, Mode: "0644"}, big, false)))
	}
	mesh := views{"big": {Name: "big", State: graph.Ready, Plan: "p", Files: files}}
	r.send(ctx, mesh, []string{"big"}, false)
	r.mustSayFailed("big", "request limit")
	var triedAt []int
	for i := 1; i <= 16; i++ {
		c.at = c.at.Add(time.Second)
		was := tries.Load()
		r.tick(ctx, mesh)
		if tries.Load() > was {
			triedAt = append(triedAt, i)
		}
	}
	if fmt.Sprint(triedAt) != "[1 3 7 15]" {
		t.Errorf("over 16 ticks a second apart the request too large was made at ticks %v, want [1 3 7 15]", triedAt)
	}
	r.mustSayFailed("big", "request limit")
}

// The holder's whole request that lets go of the path may be answered
// before the refusal it caused is: the refused request then goes at the
// next tick, as it did before refusals waited.
func TestARequestRefusedForAPathItsHolderLetGoOfMeanwhileGoesAtTheNextTick(t *testing.T) {
	r := newRig(t)
	e := r.engine()
	ctx := context.Background()
	c := r.clocked(time.Hour)
	a := &nodes.ModuleView{Name: "a", State: graph.Ready, Plan: "a1", Files: []nodes.FileView{ready(owned("/etc/shared", "a's", false))}}
	b := &nodes.ModuleView{Name: "b", State: graph.Ready, Plan: "b1", Files: []nodes.FileView{ready(owned("/etc/b", "b's", false))}}
	mesh := views{"a": a, "b": b}
	r.send(ctx, mesh, []string{"a", "b"}, false)
	shared := filepath.Join(r.root, "etc/shared")
	mustHold(t, shared, "a's")

	// The path moves from a to b: b's request reaches mesh-fill first
	// (refused), a's after it; a's answer is taken in first.
	mesh["b"] = &nodes.ModuleView{Name: "b", State: graph.Ready, Plan: "b1", Files: []nodes.FileView{ready(owned("/etc/b", "b's", false)), ready(owned("/etc/shared", "b's", false))}}
	r.s.Send(ctx, mesh, []string{"b"}, false)
	refusedB := r.next()
	mesh["a"] = &nodes.ModuleView{Name: "a", State: graph.Ready, Plan: "a2", Files: []nodes.FileView{ready(owned("/etc/a", "a's", false))}}
	r.s.Send(ctx, mesh, []string{"a"}, false)
	r.s.Land(r.next())
	r.s.Land(refusedB)
	r.send(ctx, mesh, nil, false)
	r.mustSayFailed("b", "409")
	e.take("b")

	c.at = c.at.Add(time.Second)
	r.tick(ctx, mesh)
	if n := e.take("b"); n != 1 {
		t.Errorf("b: %d requests at the tick after a let go, want 1", n)
	}
	mustHold(t, shared, "b's")
	if said, _ := r.s.Said("b"); said.State != "applied" {
		t.Errorf("b said %+v, want applied", said)
	}
}

// A 5xx is the node-engine failing, not refusing: tried at every tick, as
// before refusals waited (SPEC §4.3).
func TestAFillFailingWith500IsTriedAtEveryTick(t *testing.T) {
	r := newRig(t)
	r.misbehaving(func(fill.Request) string { return "disk full" })
	ctx := context.Background()
	c := r.clocked(time.Hour)
	var tries atomic.Int32
	r.s.cfg.OnFill = func(time.Duration, error) { tries.Add(1) }
	mesh := views{"web": {Name: "web", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(owned("/etc/web.conf", "x", false))}}}
	r.send(ctx, mesh, []string{"web"}, false)
	r.mustSayFailed("web", "disk full")
	for range 3 {
		c.at = c.at.Add(time.Second)
		r.tick(ctx, mesh)
	}
	if n := tries.Load(); n != 4 {
		t.Errorf("%d tries in the first send and 3 ticks, want 4", n)
	}
}
