package nodes

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// On a big mesh every client reads every node's plans (SPEC §2.2), so
// another node's plan that changes what binds nothing here (a placement
// moved, a file added) must cost this client next to nothing: no consumers
// list built again, no offer judged again. Each such change rebuilt the
// whole ${consumers:X} list of a provider here (sorting every consumer's
// key, a vault leaf looked up for each), or re-read and re-judged the
// offers of a provider assigned on every node, so a client read a mesh of
// 50,000 assignments again in 20 s of CPU after a reconnect (quadratic:
// BenchmarkBigMeshNodeGraph).
func TestAForeignPlanThatBindsAndOffersAsBeforeRecomputesNothing(t *testing.T) {
	m := NewNodeGraph(bigLocal)
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "node-0000.gitea", planJSON(bigLocal, "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "git-read"}}}))
	m.Put(spec.AssignmentsBucket, "node-0000.cc", planJSON(bigLocal, "cc", Plan{
		Files: []FileSpec{{Path: "/etc/cc/agent", Template: "b"}}, Provisions: []ProvisionSpec{{Provision: "api", Provider: "agent", Credential: "token"}}}))
	m.Put(spec.AssignmentsBucket, "node-0000.agent", bigPlan(bigLocal, "agent", 0))
	for n := 1; n <= 3; n++ {
		m.Put(spec.AssignmentsBucket, spec.EncodeKey(bigNode(n), "agent"), bigPlan(bigNode(n), "agent", 0))
		m.Put(spec.AssignmentsBucket, spec.EncodeKey(bigNode(n), "c01"), bigPlan(bigNode(n), "c01", 0))
	}
	for _, mod := range []string{"gitea", "cc", "agent"} {
		m.SetArchive(mod, digestA, map[string][]byte{"c": []byte("${consumers:git-read}"), "b": []byte("${bound:api:url}"), "t": []byte("x")})
	}
	for _, name := range m.TakeNewSecrets() {
		m.SetSecret(name, []byte("v"), time.Time{})
	}
	m.Stabilize()
	if f := file(m, "gitea", "/etc/gitea/consumers.json"); f.Value == nil || len(f.Value.mustBytes()) < 100 {
		t.Fatalf("gitea's consumers not filled: %+v", f)
	}
	for _, key := range []string{spec.EncodeKey(bigNode(2), "c01"), spec.EncodeKey(bigNode(2), "agent")} {
		toks, _ := spec.DecodeKey(key, 2)
		rec := m.Graph().Counters().Recomputed.Load()
		m.Put(spec.AssignmentsBucket, key, bigPlan(toks[0], toks[1], 1)) // its placement moved
		m.Stabilize()
		if n := m.Graph().Counters().Recomputed.Load() - rec; n != 0 {
			t.Errorf("%s changed its placement alone: %d nodes recomputed here, want none", key, n)
		}
	}
}

// The offers of a provider assigned on several nodes are its first key's
// in byte order (SPEC §4.6), as keys come and go: a key put before the
// first becomes it, the first deleted hands over to the next.
func TestOffersFollowTheFirstKeyAsKeysComeAndGo(t *testing.T) {
	m := NewNodeGraph(bigLocal)
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "node-0000.cc", planJSON(bigLocal, "cc", Plan{
		Files: []FileSpec{{Path: "/etc/cc/agent", Template: "b"}}, Provisions: []ProvisionSpec{{Provision: "api", Provider: "agent", Credential: "token"}}}))
	m.SetArchive("cc", digestA, map[string][]byte{"b": []byte("${bound:api:url}")})
	agent := func(node, url string) []byte {
		return planJSON(node, "agent", Plan{Provides: []Offer{{Provision: "api", Have: map[string]string{"url": url}}, {Provision: "admin", AnsweredBy: AnsweredByHelper}}})
	}
	want := func(step, url string) {
		t.Helper()
		m.Stabilize()
		if f := file(m, "cc", "/etc/cc/agent"); f.Value == nil || string(f.Value.mustBytes()) != url {
			t.Fatalf("%s: cc's file %+v, want %q", step, f, url)
		}
	}
	m.Put(spec.AssignmentsBucket, "node-0003.agent", agent("node-0003", "B"))
	want("node-0003 alone", "B")
	m.Put(spec.AssignmentsBucket, "node-0002.agent", agent("node-0002", "A"))
	want("node-0002 put before it", "A")
	m.Put(spec.AssignmentsBucket, "node-0003.agent", agent("node-0003", "B2"))
	want("node-0003 changed", "A")
	m.Put(spec.AssignmentsBucket, "node-0001.agent", agent("node-0001", "C"))
	want("node-0001 put first", "C")
	m.Put(spec.AssignmentsBucket, "node-0001.agent", agent("node-0001", "C2"))
	want("node-0001 changed", "C2")
	m.Delete(spec.AssignmentsBucket, "node-0001.agent")
	want("node-0001 deleted", "A")
	m.Delete(spec.AssignmentsBucket, "node-0003.agent")
	want("node-0003 deleted", "A")
	m.Delete(spec.AssignmentsBucket, "node-0002.agent")
	m.Stabilize()
	if v := m.View("cc"); v.State == graph.Ready {
		t.Fatalf("agent assigned nowhere: cc %+v", v)
	}
}

// Consumers bound and unbound in one batch (the list built once, at its
// end): each new consumer's credential is asked in that batch, an answer
// taken before the stabilization counts, and the list is the batch's last
// word.
func TestABatchOfBindingsIsListedWithEveryCredentialAsked(t *testing.T) {
	m := NewNodeGraph(bigLocal)
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "node-0000.gitea", planJSON(bigLocal, "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "git-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:git-read}")})
	m.Put(spec.AssignmentsBucket, "node-0001.c01", bigPlan("node-0001", "c01", 0))
	for _, name := range m.TakeNewSecrets() {
		m.SetSecret(name, []byte("v1"), time.Time{})
	}
	m.Stabilize()
	// One batch: node-0002 and node-0003 bound, node-0001 unbound, node-0003 unbound again and bound.
	m.Put(spec.AssignmentsBucket, "node-0002.c01", bigPlan("node-0002", "c01", 0))
	m.Put(spec.AssignmentsBucket, "node-0003.c01", bigPlan("node-0003", "c01", 0))
	m.Put(spec.AssignmentsBucket, "node-0001.c01", bigPlanAs("node-0001", "c01", "c05", 1))
	m.Put(spec.AssignmentsBucket, "node-0003.c01", bigPlanAs("node-0003", "c01", "c05", 1))
	m.SetSecret("pair/gitea/git-read/node-0002/c01", []byte("v2"), time.Time{}) // an answer in the same batch
	m.Put(spec.AssignmentsBucket, "node-0003.c01", bigPlan("node-0003", "c01", 2))
	asked := m.TakeNewSecrets()
	if want := []string{"pair/gitea/git-read/node-0002/c01", "pair/gitea/git-read/node-0003/c01"}; !slices.Equal(sorted(asked), want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	if m.WantsSecret("pair/gitea/git-read/node-0001/c01") {
		t.Fatal("node-0001's credential still wanted once it unbound")
	}
	m.SetSecret("pair/gitea/git-read/node-0003/c01", []byte("v3"), time.Time{})
	m.Stabilize()
	got := string(file(m, "gitea", "/etc/gitea/consumers.json").Value.mustBytes())
	for _, w := range []string{`"consumer":"node-0002"`, `"value":"v2"`, `"consumer":"node-0003"`, `"value":"v3"`} {
		if !strings.Contains(got, w) {
			t.Fatalf("consumers %s: lacks %s", got, w)
		}
	}
	if strings.Contains(got, "node-0001") {
		t.Fatalf("consumers %s: node-0001 unbound", got)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
