package nodes

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client on a big mesh reads every node's assignments (SPEC §2.2): the
// consumers of its providers (§4.5) and the offers of the providers its
// modules bind to (§4.6) may sit anywhere. bigMesh is node-0000 with 20
// modules among nodes-1 others of 25 modules each, every plan a few KB:
// "gitea" (here) is consumed by module c01 of every node, and "agent" runs
// on every node (the first key in byte order, here, offers what the local
// module cc binds to).
type bigMesh struct {
	m      *NodeGraph
	keys   []string // every assignment key, sorted (a snapshot's order)
	values map[string][]byte
}

const bigLocal = "node-0000"

func bigNode(n int) string { return fmt.Sprintf("node-%04d", n) }

// bigPlan is a plan of a few KB: files, placement, secrets, a provision
// or two, offers.
func bigPlan(node, mod string, v int) []byte { return bigPlanAs(node, mod, mod, v) }

// bigPlanAs is bigPlan of mod binding and offering as role does.
func bigPlanAs(node, mod, role string, v int) []byte {
	p := Plan{Placement: map[string]map[string]string{}, Secrets: []SecretSpec{{Name: "s0"}}}
	for f := range 8 {
		p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/%s/conf-%d.toml", mod, f), Template: "t",
			Owner: mod, Group: mod, Mode: "0640", Form: FormOwned, OnChange: OnChange{Action: "restart", Unit: mod + ".service"}})
	}
	for _, k := range []string{"dir", "port", "access", "seat", "machine"} {
		p.Placement[k] = map[string]string{}
		for j := range 4 {
			p.Placement[k][fmt.Sprint("a", j)] = fmt.Sprintf("%s-%s-%s-%d-v%d", k, node, mod, j, v)
		}
	}
	switch role {
	case "agent":
		p.Provides = []Offer{{Provision: "api", Have: map[string]string{"url": "https://agent.mesh"}}, {Provision: "admin", AnsweredBy: AnsweredByHelper}}
	case "c01":
		p.Provisions = []ProvisionSpec{{Provision: "git-read", Provider: "gitea", Credential: "token"}}
	default:
		p.Provisions = []ProvisionSpec{{Provision: "push", Provider: "metrics", Credential: "token"}}
	}
	return planJSON(node, mod, p)
}

func newBigMesh(tb testing.TB, nodes int) *bigMesh {
	bm := &bigMesh{m: NewNodeGraph(bigLocal), values: map[string][]byte{}}
	registryAll(bm.m)
	local := []string{"gitea", "agent", "cc", "c01"}
	for i := len(local); i < 20; i++ {
		local = append(local, fmt.Sprintf("c%02d", i))
	}
	for _, mod := range local {
		var v []byte
		switch mod {
		case "gitea":
			v = planJSON(bigLocal, mod, Plan{Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "git-read"}}})
		case "cc":
			v = planJSON(bigLocal, mod, Plan{Files: []FileSpec{{Path: "/etc/cc/agent", Template: "b"}},
				Provisions: []ProvisionSpec{{Provision: "api", Provider: "agent", Credential: "token"}}})
		default:
			v = bigPlan(bigLocal, mod, 0)
		}
		bm.values[spec.EncodeKey(bigLocal, mod)] = v
	}
	for n := 1; n < nodes; n++ {
		for i := range 25 {
			mod := fmt.Sprintf("c%02d", i)
			if i == 0 {
				mod = "agent"
			}
			bm.values[spec.EncodeKey(bigNode(n), mod)] = bigPlan(bigNode(n), mod, 0)
		}
	}
	for k := range bm.values {
		bm.keys = append(bm.keys, k)
	}
	sort.Strings(bm.keys)
	return bm
}

// load puts every assignment in key order, as a snapshot does, with the
// archives and the consumers' credentials, and stabilizes once.
func (bm *bigMesh) load(tb testing.TB) {
	m := bm.m
	for _, k := range bm.keys {
		m.Put(spec.AssignmentsBucket, k, bm.values[k])
	}
	for _, mod := range m.Modules() {
		m.SetArchive(mod, digestA, map[string][]byte{
			"c": []byte("${consumers:git-read}"), "b": []byte("${bound:api:url}"), "t": []byte("x = ${dir:a0}\n")})
	}
	for _, name := range m.TakeNewSecrets() {
		m.SetSecret(name, []byte("v-"+name), time.Time{})
	}
	m.Stabilize()
	if v := m.View("cc"); v == nil || len(v.Files) != 1 || string(v.Files[0].Value.mustBytes()) != "https://agent.mesh" {
		tb.Fatalf("cc not filled from agent's offer: %+v", v)
	}
}

// BenchmarkBigMeshNodeGraph: the mesh's own cost of a big mesh, without
// the bus: the first load of 10,000 and 50,000 assignments (per
// assignment: it should not grow with the mesh), a change of another
// node's plan that binds nothing here, and one that binds a consumer to
// this node's gitea.
func BenchmarkBigMeshNodeGraph(b *testing.B) {
	for _, nodes := range []int{400, 2000} {
		b.Run(fmt.Sprintf("assignments=%d", nodes*25), func(b *testing.B) {
			bm := newBigMesh(b, nodes)
			start := time.Now()
			bm.load(b)
			took := time.Since(start)
			b.ReportMetric(float64(took.Microseconds())/float64(len(bm.keys)), "load-us/assignment")
			m := bm.m
			renders := func() uint64 { return m.Renders().Files.Load() + m.Renders().Items.Load() }

			// A foreign plan changing what binds nothing here.
			const changes = 2000
			r0 := renders()
			start = time.Now()
			for i := range changes {
				k := spec.EncodeKey(bigNode(1+i%(nodes-1)), "c05")
				m.Put(spec.AssignmentsBucket, k, bigPlan(bigNode(1+i%(nodes-1)), "c05", i+1))
				m.Stabilize()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/changes, "foreign-us/change")
			b.ReportMetric(float64(renders()-r0)/changes, "foreign-renders/change")

			// agent's plan on another node changing (its offers are read
			// from this node's, the first key).
			r0 = renders()
			start = time.Now()
			for i := range changes {
				k := spec.EncodeKey(bigNode(1+i%(nodes-1)), "agent")
				m.Put(spec.AssignmentsBucket, k, bigPlan(bigNode(1+i%(nodes-1)), "agent", i+1))
				m.Stabilize()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/changes, "agent-us/change")
			b.ReportMetric(float64(renders()-r0)/changes, "agent-renders/change")

			// A consumer of gitea whose plan changes but still binds as
			// it did (a placement moved).
			r0 = renders()
			start = time.Now()
			for i := range changes {
				k := spec.EncodeKey(bigNode(1+i%(nodes-1)), "c01")
				m.Put(spec.AssignmentsBucket, k, bigPlan(bigNode(1+i%(nodes-1)), "c01", i+1))
				m.Stabilize()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/changes, "consumer-us/change")
			b.ReportMetric(float64(renders()-r0)/changes, "consumer-renders/change")

			// The bus came back: every key read again, as it is.
			for _, k := range bm.keys {
				bm.values[k] = nil
			}
			r0 = renders()
			start = time.Now()
			for _, k := range bm.keys {
				toks, _ := spec.DecodeKey(k, 2)
				v := bigPlan(toks[0], toks[1], 0)
				if toks[0] == bigLocal {
					continue // the local plans are as they were
				}
				m.Put(spec.AssignmentsBucket, k, v)
			}
			m.Stabilize()
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(len(bm.keys)), "reread-us/assignment")
			b.ReportMetric(float64(renders()-r0), "reread-renders")

			// A consumer of gitea bound and unbound on another node.
			const binds = 200
			r0 = renders()
			start = time.Now()
			for i := range binds {
				node := bigNode(1 + i/2%(nodes-1))
				k := spec.EncodeKey(node, "c01")
				if i%2 == 0 {
					m.Put(spec.AssignmentsBucket, k, bigPlanAs(node, "c01", "c05", i+1)) // binds metrics, not gitea
				} else {
					m.Put(spec.AssignmentsBucket, k, bigPlan(node, "c01", i+1))
				}
				for _, name := range m.TakeNewSecrets() {
					m.SetSecret(name, []byte("v-"+name), time.Time{})
				}
				m.Stabilize()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/binds, "binding-us/change")
			b.ReportMetric(float64(renders()-r0)/binds, "binding-renders/change")

			// A consumer module of gitea rolled out to every other node at
			// once: one batch (the daemon takes what waits as one), one
			// stabilization.
			r0 = renders()
			start = time.Now()
			for n := 1; n < nodes; n++ {
				m.Put(spec.AssignmentsBucket, spec.EncodeKey(bigNode(n), "c25"), bigPlanAs(bigNode(n), "c25", "c01", 0))
			}
			for _, name := range m.TakeNewSecrets() {
				m.SetSecret(name, []byte("v-"+name), time.Time{})
			}
			m.Stabilize()
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "rollout-ms")
			b.ReportMetric(float64(renders()-r0), "rollout-renders")
		})
	}
}
