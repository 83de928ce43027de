package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The steps of a schedule. Churn writes values; a fault's start and end
// are two steps, the end drawn a few steps later, so churn lands while it
// lasts.
const (
	opPutConfig    = "put-config"    // Key=Value
	opDelConfig    = "del-config"    // Key
	opAssign       = "assign"        // Key in plan variant N (a plan change when it is assigned)
	opUnassign     = "unassign"      // Key
	opPutBound     = "put-bound"     // Bucket Key, its values suffixed with Value
	opDelBound     = "del-bound"     // Bucket Key
	opRotate       = "rotate"        // secret Key gets Value
	opKillMember   = "kill-member"   // member N stopped
	opStartMember  = "start-member"  // member N started on its store
	opRestartBus   = "restart-bus"   // every member stopped, Dur later started
	opCutConn      = "cut-conn"      // Node's client connection closed by the server
	opVaultSilent  = "vault-silent"  // the vault takes asks and answers none
	opVaultSpeak   = "vault-speak"   // … answers again
	opVaultRefuse  = "vault-refuse"  // the vault refuses Key
	opVaultLift    = "vault-lift"    // … no more
	opFillStop     = "fill-stop"     // Node's mesh-fill stopped
	opFillStart    = "fill-start"    // … started again on its state dir
	opFillSlow     = "fill-slow"     // Node's mesh-fill waits Dur before each request
	opFillFast     = "fill-fast"     // … no more
	opKillClient   = "kill-client"   // Node's client SIGKILLed
	opStartClient  = "start-client"  // … started again on its state dir
	opFillBetween  = "fill-between"  // at Node's next fill request: mesh-fill stopped, Key unassigned, mesh-fill started
	opSettleMember = "settle-member" // wait until every member is up and the cluster takes writes
)

// step is one step of a schedule: Pause, then the operation.
type step struct {
	Pause  time.Duration
	Op     string
	Node   string
	Bucket string
	Key    string
	Value  string
	N      int
	Dur    time.Duration
}

func (s step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%-5s %s", s.Pause.Round(time.Millisecond), s.Op)
	for _, f := range []struct{ name, v string }{{"node", s.Node}, {"bucket", s.Bucket}, {"key", s.Key}, {"value", s.Value}} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%s", f.name, f.v)
		}
	}
	switch s.Op {
	case opAssign, opKillMember, opStartMember:
		fmt.Fprintf(&b, " n=%d", s.N)
	}
	if s.Dur > 0 {
		fmt.Fprintf(&b, " dur=%s", s.Dur)
	}
	return b.String()
}

// kinds of fault a schedule may draw.
type faults struct {
	member, bus, conn, vaultSilent, vaultRefuse, fillStop, fillSlow, client, between bool
	// once draws as draw did before a fault's end let it be drawn again
	// (each kind on at most once per node, no whole-cluster restart after
	// a member kill): the regression seeds keep the schedules that found
	// their defects.
	once bool
}

// allFaults are every fault kind; shortFaults those of the short run in
// `make test` (see docs/RELIABILITY.md for why any is left out).
var (
	allFaults   = faults{true, true, true, true, true, true, true, true, true, false}
	shortFaults = allFaults
)

// draw is the schedule of seed: n steps over w (w is not changed: the
// drawing keeps its own model of what is assigned, deleted, down), then
// the ends of every fault still on and the heal (deleted config keys and
// bound entries written again), so the buckets end complete.
func draw(seed uint64, n int, w *world, fs faults) []step {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	assigned := map[string]bool{}
	for k := range w.base {
		assigned[k] = true
	}
	delConfig, delBound := map[string]bool{}, map[string]bool{}
	configKeys := []string{}
	for _, k := range keysOf(w.config) {
		if !strings.HasPrefix(k, keptWaiting+".") {
			configKeys = append(configKeys, k)
		}
	}
	var boundKeys [][2]string
	for _, b := range keysOf(w.bound) {
		for _, k := range keysOf(w.bound[b]) {
			if w.bound[b][k].State == "bound" {
				boundKeys = append(boundKeys, [2]string{b, k})
			}
		}
	}
	var assignKeys, genKeys []string
	for _, k := range keysOf(w.base) {
		if k != keptWaiting {
			assignKeys = append(assignKeys, k)
		}
		if w.generated[k] {
			genKeys = append(genKeys, k)
		}
	}
	secretNames := keysOf(w.secrets)
	pick := func(l []string) string { return l[r.IntN(len(l))] }
	value := func(i int) string { return fmt.Sprintf("v%d-%d-%x", seed, i, r.Uint32()) }

	// What is down or on now, and the end steps waiting for their index.
	memberDown, vaultSilent := false, false
	refused := map[string]bool{}
	fillDown, fillSlow, clientDown := map[string]bool{}, map[string]bool{}, map[string]bool{}
	ends := map[int][]step{}
	endAt := func(i int, s step) { at := i + 1 + r.IntN(6); ends[at] = append(ends[at], s) }

	var out []step
	for i := 0; i < n; i++ {
		for _, e := range ends[i] {
			e.Pause = time.Duration(r.IntN(200)) * time.Millisecond
			out = append(out, e)
			// The fault is over: it may be drawn again (before, the
			// flags stayed set, so each kind came once per seed).
			if fs.once {
				continue
			}
			switch e.Op {
			case opStartMember:
				memberDown = false
			case opVaultSpeak:
				vaultSilent = false
			case opVaultLift:
				delete(refused, e.Key)
			case opFillStart:
				fillDown[e.Node] = false
			case opFillFast:
				fillSlow[e.Node] = false
			case opStartClient:
				clientDown[e.Node] = false
			}
		}
		delete(ends, i)
		s := step{Pause: time.Duration(20+r.IntN(230)) * time.Millisecond}
		node := chaosNodes[r.IntN(len(chaosNodes))]
		if r.IntN(10) < 7 { // churn
			switch c := r.IntN(20); {
			case c < 6:
				k := pick(configKeys)
				s.Op, s.Key, s.Value = opPutConfig, k, value(i)
				delete(delConfig, k)
			case c < 7:
				k := pick(configKeys)
				s.Op, s.Key = opDelConfig, k
				delConfig[k] = true
			case c < 10:
				k := pick(assignKeys)
				if assigned[k] && r.IntN(2) == 0 {
					s.Op, s.Key = opUnassign, k
					assigned[k] = false
					break
				}
				v := 0
				if w.generated[k] {
					v = r.IntN(variants)
				}
				s.Op, s.Key, s.N = opAssign, k, v
				assigned[k] = true
			case c < 12:
				k := pick(genKeys)
				v := r.IntN(variants)
				s.Op, s.Key, s.N = opAssign, k, v
				assigned[k] = true
			case c < 15:
				bk := boundKeys[r.IntN(len(boundKeys))]
				s.Op, s.Bucket, s.Key, s.Value = opPutBound, bk[0], bk[1], value(i)
				delete(delBound, bk[0]+" "+bk[1])
			case c < 16:
				bk := boundKeys[r.IntN(len(boundKeys))]
				s.Op, s.Bucket, s.Key = opDelBound, bk[0], bk[1]
				delBound[bk[0]+" "+bk[1]] = true
			case c < 18: // an item: the key its template renders
				k := pick(genKeys) + "." + scale.ItemKey
				s.Op, s.Key, s.Value = opPutConfig, k, value(i)
				delete(delConfig, k)
			default:
				s.Op, s.Key, s.Value = opRotate, pick(secretNames), fmt.Sprintf("chaos-secret-%d-%d-%x", seed, i, r.Uint64())
			}
			out = append(out, s)
			continue
		}
		switch f := r.IntN(9); {
		case f == 0 && fs.member && !memberDown:
			s.Op, s.N = opKillMember, r.IntN(3)
			memberDown = true
			endAt(i, step{Op: opStartMember, N: s.N})
		case f == 1 && fs.bus && !memberDown:
			s.Op, s.Dur = opRestartBus, time.Duration(500+r.IntN(2500))*time.Millisecond
		case f == 2 && fs.conn:
			s.Op, s.Node = opCutConn, node
		case f == 3 && fs.vaultSilent && !vaultSilent:
			s.Op = opVaultSilent
			vaultSilent = true
			endAt(i, step{Op: opVaultSpeak})
		case f == 4 && fs.vaultRefuse:
			k := pick(secretNames)
			if refused[k] {
				continue
			}
			s.Op, s.Key = opVaultRefuse, k
			refused[k] = true
			endAt(i, step{Op: opVaultLift, Key: k})
		case f == 5 && fs.fillStop && !fillDown[node]:
			s.Op, s.Node = opFillStop, node
			fillDown[node] = true
			endAt(i, step{Op: opFillStart, Node: node})
		case f == 6 && fs.fillSlow && !fillSlow[node]:
			s.Op, s.Node, s.Dur = opFillSlow, node, time.Duration(100+r.IntN(900))*time.Millisecond
			fillSlow[node] = true
			endAt(i, step{Op: opFillFast, Node: node})
		case f == 7 && fs.client && !clientDown[node]:
			s.Op, s.Node = opKillClient, node
			clientDown[node] = true
			endAt(i, step{Op: opStartClient, Node: node})
		case f == 8 && fs.between && !fillDown[node]:
			var mine []string
			for _, k := range assignKeys {
				if assigned[k] && strings.HasPrefix(k, spec.EncodeKey(node)+".") {
					mine = append(mine, k)
				}
			}
			if len(mine) == 0 {
				continue
			}
			s.Op, s.Node, s.Key = opFillBetween, node, pick(mine)
			assigned[s.Key] = false
		default:
			continue
		}
		out = append(out, s)
	}
	// Every fault still on ends, in index order; then the heal.
	for _, i := range slices.Sorted(keysInt(ends)) {
		out = append(out, ends[i]...)
	}
	if fs.member || fs.bus {
		out = append(out, step{Op: opSettleMember})
	}
	for _, k := range keysOf(delConfig) {
		out = append(out, step{Op: opPutConfig, Key: k, Value: fmt.Sprintf("healed-%d", seed)})
	}
	for _, bk := range keysOf(delBound) {
		b, k, _ := strings.Cut(bk, " ")
		out = append(out, step{Op: opPutBound, Bucket: b, Key: k, Value: fmt.Sprintf("healed-%d", seed)})
	}
	return out
}

func keysInt[V any](m map[int]V) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// describe is the schedule, one step a line, for a failure's message.
func describe(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "  %3d %s\n", i, s)
	}
	return b.String()
}
