package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// probeBucket is the driver's own bucket: a write to it that holds says
// the cluster takes writes again.
const probeBucket = "chaos-probe"

// rig is one mesh: a bus, the provisioner server, the dev vault, and per
// node a mesh-fill and a client process.
type rig struct {
	t       *testing.T
	w       *world
	bus     *cluster
	dir     string // roots, state dirs, sockets, logs
	log     zerolog.Logger
	server  *provServer
	vault   *devvault.Vault
	fills   map[string]*fillPart
	clients map[string]*clientPart
	leaks   *leakWatch
}

// newRig starts the parts on bus, whose buckets are loaded already:
// the vault holds secrets, every node's root starts with the stand-ins.
func newRig(t *testing.T, w *world, bus *cluster, bin string, secrets map[string]string, leaks *leakWatch) *rig {
	t.Helper()
	r := &rig{t: t, w: w, bus: bus, dir: shortDir(t), fills: map[string]*fillPart{}, clients: map[string]*clientPart{}, leaks: leaks}
	r.log = newLog(t, filepath.Join(r.dir, "parts.log"))
	r.server = startServer(bus.urls, bus.replicas(), r.log)
	t.Cleanup(r.server.stop)
	// The clients start once the server's buckets and registry are there,
	// rather than finding them at their next look (every 5 s).
	if err := waitFor(time.Minute, func() error {
		reg, err := bus.entries(spec.RegistryBucket)
		if err == nil && len(reg) == 0 {
			err = fmt.Errorf("the registry is empty")
		}
		for _, b := range []string{spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket} {
			if err == nil {
				_, err = bus.entries(b)
			}
		}
		return err
	}); err != nil {
		t.Fatalf("the provisioner server's buckets: %v", err)
	}

	vnc, err := nats.Connect(bus.urls, nats.Name("mesh-vault"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vnc.Close)
	r.vault = devvault.New(r.log)
	for _, name := range keysOf(secrets) {
		r.vault.Set(context.Background(), name, []byte(secrets[name]))
	}
	if err := r.vault.Start(vnc, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.vault.Stop)

	for _, node := range chaosNodes {
		root, fillState, clientState, err := nodeDirs(r.dir, node)
		if err != nil {
			t.Fatal(err)
		}
		for p, text := range w.standIns {
			full := filepath.Join(root, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sock := filepath.Join(r.dir, node+".fill")
		f := &fillPart{t: t, node: node, sock: sock, root: root, state: fillState, log: r.log, requests: make(chan string, 1)}
		f.start()
		t.Cleanup(f.stop)
		r.fills[node] = f
		c := &clientPart{t: t, node: node, args: clientArgs(bin, node, bus.urls, sock, clientState),
			logs: filepath.Join(r.dir, node+".client.log")}
		c.start()
		t.Cleanup(func() { c.kill(syscall.SIGKILL) })
		r.clients[node] = c
	}
	return r
}

// load writes w's inputs onto a fresh bus, as their owners would.
func load(bus *cluster, w *world) {
	bus.makeBuckets(append([]string{spec.AssignmentsBucket, spec.ConfigBucket, probeBucket}, keysOf(w.bound)...), spec.ArtifactsStore)
	for _, name := range keysOf(w.archives) {
		bus.putObject(spec.ArtifactsStore, name, w.archives[name])
	}
	for _, k := range keysOf(w.config) {
		bus.put(spec.ConfigBucket, k, []byte(w.config[k]))
	}
	for _, b := range keysOf(w.bound) {
		for _, k := range keysOf(w.bound[b]) {
			data, _ := json.Marshal(w.bound[b][k])
			bus.put(b, k, data)
		}
	}
	for _, k := range keysOf(w.base) {
		data, err := w.planVariant(k, 0)
		if err != nil {
			bus.t.Fatal(err)
		}
		bus.put(spec.AssignmentsBucket, k, data)
	}
}

// expected is what the driver wrote to the inputs' buckets: bucket →
// key → value, deleted keys left out.
func (w *world) expected() map[string]map[string][]byte {
	out := map[string]map[string][]byte{spec.AssignmentsBucket: {}, spec.ConfigBucket: {}}
	for k, on := range w.assigned {
		if on {
			out[spec.AssignmentsBucket][k], _ = w.planVariant(k, w.variant[k])
		}
	}
	for k, v := range w.config {
		if !w.deleted[k] {
			out[spec.ConfigBucket][k] = []byte(v)
		}
	}
	for b, entries := range w.boundNow {
		out[b] = map[string][]byte{}
		for k, v := range entries {
			if !w.unbound[b+" "+k] {
				out[b][k] = v
			}
		}
	}
	return out
}

// copyInputs copies the inputs' buckets and the templates archives of
// from onto to as they are now: what a fresh client is given. It first
// waits until from's buckets hold exactly what the driver wrote (a
// member restarted may answer a read from behind for a while); a write
// acknowledged and then lost fails the run.
func copyInputs(from, to *cluster, w *world) {
	to.t.Helper()
	want := w.expected()
	buckets := keysOf(want)
	to.makeBuckets(append(slices.Clone(buckets), probeBucket), spec.ArtifactsStore)
	for _, name := range keysOf(w.archives) {
		var data []byte
		from.retry("reading object "+name, func(ctx context.Context) error {
			obs, err := from.js.ObjectStore(ctx, spec.ArtifactsStore)
			if err == nil {
				data, err = obs.GetBytes(ctx, name)
			}
			return err
		})
		to.putObject(spec.ArtifactsStore, name, data)
	}
	for _, b := range buckets {
		err := waitFor(30*time.Second, func() error {
			got, err := from.entries(b)
			if err != nil {
				return err
			}
			for _, k := range keysOf(want[b]) {
				if !bytes.Equal(got[k], want[b][k]) {
					return fmt.Errorf("bucket %s key %s holds %q, the driver wrote %q", b, k, got[k], want[b][k])
				}
			}
			for k := range got {
				if _, ok := want[b][k]; !ok {
					return fmt.Errorf("bucket %s holds key %s, which the driver deleted", b, k)
				}
			}
			return nil
		})
		if err != nil {
			to.t.Fatalf("the cluster's buckets do not hold what was written: %v", err)
		}
		for _, k := range keysOf(want[b]) {
			to.put(b, k, want[b][k])
		}
	}
}

// do runs one step of the schedule.
func (r *rig) do(s step) {
	r.t.Helper()
	w := r.w
	switch s.Op {
	case opPutConfig:
		w.config[s.Key] = s.Value
		delete(w.deleted, s.Key)
		r.bus.put(spec.ConfigBucket, s.Key, []byte(s.Value))
	case opDelConfig:
		w.deleted[s.Key] = true
		r.bus.del(spec.ConfigBucket, s.Key)
	case opAssign:
		data, err := w.planVariant(s.Key, s.N)
		if err != nil {
			r.t.Fatal(err)
		}
		w.assigned[s.Key], w.variant[s.Key] = true, s.N
		r.bus.put(spec.AssignmentsBucket, s.Key, data)
	case opUnassign:
		w.assigned[s.Key] = false
		r.bus.del(spec.AssignmentsBucket, s.Key)
	case opPutBound:
		e := w.bound[s.Bucket][s.Key]
		e.Values = maps.Clone(e.Values)
		for k, v := range e.Values {
			e.Values[k] = v + "-" + s.Value
		}
		data, _ := json.Marshal(e)
		w.boundNow[s.Bucket][s.Key] = data
		delete(w.unbound, s.Bucket+" "+s.Key)
		r.bus.put(s.Bucket, s.Key, data)
	case opDelBound:
		w.unbound[s.Bucket+" "+s.Key] = true
		r.bus.del(s.Bucket, s.Key)
	case opRotate:
		r.leaks.plant(s.Value)
		w.secrets[s.Key] = s.Value
		r.vault.Set(context.Background(), s.Key, []byte(s.Value))
	case opKillMember:
		r.bus.stop(s.N)
	case opStartMember:
		r.bus.start(s.N)
	case opRestartBus:
		r.bus.stopAll()
		time.Sleep(s.Dur) // the outage's length is the step's
		r.bus.startAll()
	case opSettleMember:
		r.bus.startAll()
		r.bus.put(probeBucket, "settled", []byte("yes"))
	case opCutConn:
		r.bus.disconnect("provisioner." + s.Node)
	case opVaultSilent:
		r.vault.SetSilent(true)
	case opVaultSpeak:
		r.vault.SetSilent(false)
	case opVaultRefuse:
		r.vault.Refuse(s.Key, "chaos: refused for a while")
	case opVaultLift:
		r.vault.Refuse(s.Key, "")
	case opFillStop:
		r.fills[s.Node].stop()
	case opFillStart:
		r.fills[s.Node].start()
	case opFillSlow:
		r.fills[s.Node].slow.Store(int64(s.Dur))
	case opFillFast:
		r.fills[s.Node].slow.Store(0)
	case opKillClient:
		r.clients[s.Node].kill(syscall.SIGKILL)
	case opStartClient:
		r.clients[s.Node].start()
	case opFillBetween:
		f := r.fills[s.Node]
		f.listen.Store(true)
		select { // a fill under way, or none within 5 s: the removal lands either way
		case <-f.requests:
		case <-time.After(5 * time.Second):
		}
		f.listen.Store(false)
		f.stop()
		w.assigned[s.Key] = false
		r.bus.del(spec.AssignmentsBucket, s.Key)
		f.start()
	default:
		r.t.Fatalf("unknown step %s", s)
	}
}

// reportsOf are the reports of bus's applied bucket.
func reportsOf(bus *cluster) (map[string]report, error) {
	raw, err := bus.entries(spec.AppliedBucket)
	if err != nil {
		return nil, err
	}
	out := map[string]report{}
	for k, v := range raw {
		var rep report
		if err := json.Unmarshal(v, &rep); err != nil {
			return nil, fmt.Errorf("report %s: %w", k, err)
		}
		out[k] = rep
	}
	return out, nil
}

// report is what a check reads of a client's report (SPEC §5.3).
type report struct {
	Node, Module, State, Reason string
	Files                       []struct{ Path, Action, Digest string }
	Waiting                     []struct{ Kind, Name, Why string }
}
