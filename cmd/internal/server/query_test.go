package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func serveQuery(t *testing.T, nc *nats.Conn, js jetstream.JetStream) {
	t.Helper()
	stop, err := ServeQuery(context.Background(), nc, js, quietLog())
	if err != nil {
		t.Fatalf("ServeQuery: %v", err)
	}
	t.Cleanup(stop)
}

// seed fills the buckets with a small fleet: in-shape keys and keys out of
// shape that NATS accepts.
func seed(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := testCtx(t)
	if _, _, err := PublishRegistry(ctx, bucket(t, js, spec.RegistryBucket), Registry()); err != nil {
		t.Fatal(err)
	}
	put(t, bucket(t, js, spec.RegistryBucket), "a.b", `{"kind":"a.b"}`) // two tokens: out of shape

	needs := bucket(t, js, spec.NeedsBucket)
	for _, n := range [][4]string{
		{"ace", "claude-code", "config", "model"},
		{"ace", "claude-code", "bound", "gitea-read:as"},
		{"ace", "zsh", "collected", "shell:zsh:normal"},
		{"g14", "claude-code", "config", "model"},
	} {
		v, _ := json.Marshal(map[string]string{"node": n[0], "module": n[1], "kind": n[2], "name": n[3], "state": "met"})
		put(t, needs, spec.EncodeKey(n[:]...), string(v))
	}
	put(t, needs, "ace.m=ZZ.config.k", `{}`)          // bad escape
	put(t, needs, "ace.claude-code.config", `{}`)     // too few tokens
	put(t, needs, "=41ce.claude-code.config.k", `{}`) // escapes a plain byte

	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "ace.claude-code", `{"node":"ace","module":"claude-code","state":"waiting"}`)
	put(t, applied, "ace.zsh", `{"node":"ace","module":"zsh","state":"applied"}`)
	put(t, applied, "g14.claude-code", `not json at all`) // a value out of shape
	put(t, applied, "=41ce.m", `{}`)
	put(t, applied, "ace.claude-code.extra", `{}`)

	collect := bucket(t, js, spec.CollectBucket)
	coll := spec.EncodeToken("shell:zsh:normal")
	put(t, collect, "ace."+coll+".zsh", `{"collection":"shell:zsh:normal","contributor":"zsh","item":"alias ll='ls -l'\n"}`)
	put(t, collect, "ace."+coll+".git", `{"collection":"shell:zsh:normal","contributor":"git","item":"alias g=git\n"}`)
	put(t, collect, "ace.environment=3Apath.zsh", `{"collection":"environment:path","contributor":"zsh","item":"PATH=x\n"}`)
	put(t, collect, "g14."+coll+".zsh", `{"collection":"shell:zsh:normal","contributor":"zsh","item":"x\n"}`)
	put(t, collect, "ace."+coll, `{}`) // too few tokens
}

func TestQueryEachWhatAndNarrowing(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	seed(t, js)
	serveQuery(t, nc, js)
	coll := spec.EncodeToken("shell:zsh:normal")

	cases := []struct {
		req          map[string]any
		entries, oos []string
	}{
		{map[string]any{}, // what defaults to registry
			[]string{"access", "bound", "collected", "config", "consumers", "contribution", "dir", "environment", "machine", "port", "seat", "secret", "shell"},
			[]string{"a.b"}},
		{map[string]any{"what": "needs"},
			[]string{"ace.claude-code.bound.gitea-read=3Aas", "ace.claude-code.config.model", "ace.zsh.collected.shell=3Azsh=3Anormal", "g14.claude-code.config.model"},
			[]string{"=41ce.claude-code.config.k", "ace.claude-code.config", "ace.m=ZZ.config.k"}},
		{map[string]any{"what": "needs", "node": "ace"},
			[]string{"ace.claude-code.bound.gitea-read=3Aas", "ace.claude-code.config.model", "ace.zsh.collected.shell=3Azsh=3Anormal"},
			[]string{"ace.claude-code.config", "ace.m=ZZ.config.k"}},
		{map[string]any{"what": "needs", "module": "claude-code"},
			[]string{"ace.claude-code.bound.gitea-read=3Aas", "ace.claude-code.config.model", "g14.claude-code.config.model"},
			[]string{"=41ce.claude-code.config.k", "ace.claude-code.config"}},
		{map[string]any{"what": "needs", "node": "ace", "module": "claude-code"},
			[]string{"ace.claude-code.bound.gitea-read=3Aas", "ace.claude-code.config.model"},
			[]string{"ace.claude-code.config"}},
		{map[string]any{"what": "needs", "node": "nobody"}, nil, nil},
		{map[string]any{"what": "applied"},
			[]string{"ace.claude-code", "ace.zsh"},
			[]string{"=41ce.m", "ace.claude-code.extra", "g14.claude-code"}},
		{map[string]any{"what": "applied", "node": "ace"},
			[]string{"ace.claude-code", "ace.zsh"},
			[]string{"ace.claude-code.extra"}},
		{map[string]any{"what": "applied", "module": "claude-code"},
			[]string{"ace.claude-code"},
			[]string{"ace.claude-code.extra", "g14.claude-code"}},
		{map[string]any{"what": "applied", "node": "g14", "module": "claude-code"},
			nil, []string{"g14.claude-code"}},
		{map[string]any{"what": "collect"},
			[]string{"ace.environment=3Apath.zsh", "ace." + coll + ".git", "ace." + coll + ".zsh", "g14." + coll + ".zsh"},
			[]string{"ace." + coll}},
		{map[string]any{"what": "collect", "node": "ace"},
			[]string{"ace.environment=3Apath.zsh", "ace." + coll + ".git", "ace." + coll + ".zsh"},
			[]string{"ace." + coll}},
		{map[string]any{"what": "collect", "collection": "shell:zsh:normal"},
			[]string{"ace." + coll + ".git", "ace." + coll + ".zsh", "g14." + coll + ".zsh"},
			[]string{"ace." + coll}},
		{map[string]any{"what": "collect", "contributor": "zsh"},
			[]string{"ace.environment=3Apath.zsh", "ace." + coll + ".zsh", "g14." + coll + ".zsh"}, nil},
		{map[string]any{"what": "collect", "module": "zsh", "node": "ace"}, // module stands for contributor
			[]string{"ace.environment=3Apath.zsh", "ace." + coll + ".zsh"}, nil},
		{map[string]any{"what": "collect", "node": "ace", "collection": "shell:zsh:normal", "contributor": "git"},
			[]string{"ace." + coll + ".git"}, nil},
	}
	for _, c := range cases {
		name, _ := json.Marshal(c.req)
		t.Run(string(name), func(t *testing.T) {
			r, pages := ask(t, nc, c.req)
			if r.Error != "" {
				t.Fatalf("error: %s", r.Error)
			}
			what, _ := c.req["what"].(string)
			if what == "" {
				what = "registry"
			}
			if r.What != what || pages != 1 {
				t.Errorf("what %q pages %d, want %q, 1", r.What, pages, what)
			}
			entries, oos := keysOf(t, r)
			if fmtKeys(entries) != fmtKeys(c.entries) {
				t.Errorf("entries %s\n        want %s", fmtKeys(entries), fmtKeys(c.entries))
			}
			if fmtKeys(oos) != fmtKeys(c.oos) {
				t.Errorf("out_of_shape %s\n             want %s", fmtKeys(oos), fmtKeys(c.oos))
			}
			for _, o := range r.OutOfShape {
				if o.Why == "" {
					t.Errorf("out-of-shape key %s has no why", o.Key)
				}
			}
		})
	}
}

func TestQueryEntriesCarryDecodedTokensAndValue(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	seed(t, js)
	serveQuery(t, nc, js)

	r, _ := ask(t, nc, map[string]any{"what": "needs", "node": "ace", "module": "claude-code"})
	e := r.Entries[0] // ace.claude-code.bound.gitea-read=3Aas
	for field, want := range map[string]string{"key": "ace.claude-code.bound.gitea-read=3Aas",
		"node": "ace", "module": "claude-code", "kind": "bound", "name": "gitea-read:as"} {
		if got := str(t, e[field]); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	var need map[string]string
	if err := json.Unmarshal(e["value"], &need); err != nil || need["state"] != "met" || need["name"] != "gitea-read:as" {
		t.Errorf("value not the stored JSON embedded: %s (%v)", e["value"], err)
	}

	r, _ = ask(t, nc, map[string]any{"what": "applied", "node": "g14"})
	if len(r.Entries) != 0 || len(r.OutOfShape) != 1 || !strings.Contains(r.OutOfShape[0].Why, "value does not parse") {
		t.Errorf("a report that is not JSON should be out of shape, got entries %v out_of_shape %v", r.Entries, r.OutOfShape)
	}
	r, _ = ask(t, nc, map[string]any{"what": "collect", "node": "ace", "contributor": "git"})
	e = r.Entries[0]
	if str(t, e["collection"]) != "shell:zsh:normal" || str(t, e["contributor"]) != "git" || str(t, e["node"]) != "ace" {
		t.Errorf("collect entry tokens: %v", e)
	}
	r, _ = ask(t, nc, map[string]any{"what": "registry"})
	if str(t, r.Entries[0]["kind"]) != "access" {
		t.Errorf("registry entry names no kind: %v", r.Entries[0])
	}
	for _, o := range r.OutOfShape {
		if o.Key == "a.b" && !strings.Contains(o.Why, "2 tokens, want 1") {
			t.Errorf("why for a.b: %q", o.Why)
		}
	}
	r, _ = ask(t, nc, map[string]any{"what": "needs", "node": "ace"})
	for _, o := range r.OutOfShape {
		if o.Key == "ace.m=ZZ.config.k" && !strings.Contains(o.Why, "module") {
			t.Errorf("why for a bad escape names no token: %q", o.Why)
		}
	}
}

func TestQueryRefusesBadRequests(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	serveQuery(t, nc, js)
	for _, body := range []string{
		`not json`,
		`{"what": "nope"}`,
		`{"what": 3}`,
		`{"node": 5}`,
		`{"what": "needs", "nodes": "ace"}`,
		`{"what": "collect", "module": "a", "contributor": "b"}`,
		`{"page": -1}`,
		`{} {}`,
		`[]`,
		// null is JSON that is no object, as [] and 42 are: not a query.
		`null`,
		` null `,
		`42`,
		`"needs"`,
	} {
		r, raw := askRaw(t, nc, []byte(body))
		if r.Error == "" || r.Entries != nil {
			t.Errorf("%s answered %s, want {\"error\"}", body, raw)
		}
	}
	// An empty body is the default query, not an error.
	if r, raw := askRaw(t, nc, nil); r.Error != "" || r.What != "registry" {
		t.Errorf("empty request answered %s", raw)
	}
	// A field that is no token of the asked bucket's keys would narrow
	// nothing: refused, saying what does narrow it (answered, it gave the
	// whole bucket to a request that meant a part of it), as the sweep
	// refuses one. An empty field is no narrowing at all.
	for body, says := range map[string]string{
		`{"what": "registry", "node": "ace"}`:     "node narrows nothing in registry, whose keys are kind: narrow it by nothing",
		`{"what": "needs", "collection": "x"}`:    "collection narrows nothing in needs, whose keys are node.module.kind.name: narrow it by node, module",
		`{"what": "applied", "contributor": "x"}`: "contributor narrows nothing in applied, whose keys are node.module: narrow it by node, module",
		`{"what": "needs", "contributor": "zsh"}`: "contributor narrows nothing in needs",
	} {
		if r, raw := askRaw(t, nc, []byte(body)); !strings.Contains(r.Error, says) || r.Entries != nil {
			t.Errorf("%s answered %s, want an error saying %q", body, raw, says)
		}
	}
	for _, body := range []string{`{"what": "registry", "node": ""}`, `{"what": "needs", "collection": "", "contributor": ""}`,
		`{"what": "collect", "node": "ace", "collection": "x", "contributor": "y"}`} {
		if r, raw := askRaw(t, nc, []byte(body)); r.Error != "" || r.Entries == nil {
			t.Errorf("%s answered %s, want its entries", body, raw)
		}
	}
}

func TestQueryAnswersTenThousandKeysWhole(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	serveQuery(t, nc, js)

	const n = 10000
	ctx := testCtx(t)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(n))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				node := fmt.Sprintf("node-%02d", i%50)
				key := spec.EncodeKey(node, fmt.Sprintf("module-%03d", i%200), "config", fmt.Sprintf("key:%05d", i))
				v := fmt.Sprintf(`{"node":%q,"module":"module-%03d","kind":"config","name":"key:%05d","state":"waiting","why":"mesh-config_resolved has no such key yet"}`, node, i%200, i)
				if _, err := js.PublishAsync("$KV."+spec.NeedsBucket+"."+key, []byte(v)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("async puts not acknowledged")
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Follow the paging protocol with a lean decoder (the whole reply would
	// be slow to decode into maps under -race).
	start := time.Now()
	type lean struct {
		Page, Pages int
		Entries     []struct{ Key, Node, Name string }
		OutOfShape  []struct{ Key string } `json:"out_of_shape"`
		Error       string
	}
	var keys []string
	pages, oos := 0, 0
	for page := 0; page == 0 || page < pages; page++ {
		m, err := nc.Request(spec.QuerySubject, fmt.Appendf(nil, `{"what":"needs","page":%d}`, page), 10*time.Second)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		var r lean
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != "" || r.Page != page {
			t.Fatalf("page %d: %v %s (page %d)", page, err, r.Error, r.Page)
		}
		pages = r.Pages
		oos += len(r.OutOfShape)
		for _, e := range r.Entries {
			keys = append(keys, e.Key)
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	if len(keys) != n || len(seen) != n || oos != 0 {
		t.Fatalf("%d entries (%d distinct), %d out of shape; want %d", len(keys), len(seen), oos, n)
	}
	if pages < 2 {
		t.Errorf("%d keys came in %d page(s): the test meant to exceed one reply", n, pages)
	}
	if !sort.StringsAreSorted(keys) {
		t.Errorf("entries across pages are not in key order")
	}
	t.Logf("%d keys in %d pages, %s", n, pages, time.Since(start))

	r, _ := ask(t, nc, map[string]any{"what": "needs", "node": "node-07"})
	if len(r.Entries) != n/50 {
		t.Errorf("node narrowing: %d entries, want %d", len(r.Entries), n/50)
	}
}

func TestQueryPagesLargeValues(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 256 * 1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	serveQuery(t, nc, js)
	applied := bucket(t, js, spec.AppliedBucket)
	report := func(module string, reasonBytes int) string {
		return fmt.Sprintf(`{"node":"ace","module":%q,"state":"failed","reason":%q}`, module, strings.Repeat("x", reasonBytes))
	}
	stored := map[string]string{}
	for i := range 5 {
		key := fmt.Sprintf("ace.m%d", i)
		stored[key] = report(fmt.Sprintf("m%d", i), 100*1024)
		put(t, applied, key, stored[key]) // 2 fit in a page, not 3
	}
	// As large as the bus takes, larger than fits in a reply with its key.
	huge := report("huge", 0)
	huge = report("huge", 256*1024-64-len(huge))
	put(t, applied, "ace.huge", huge)
	put(t, applied, "ace.x.y", `{}`)

	r, pages := ask(t, nc, map[string]any{"what": "applied"})
	// Pages: m0 m1 | m2 m3 | m4, huge (without its value), ace.x.y.
	if pages != 3 || len(r.Entries) != 6 || len(r.OutOfShape) != 1 {
		t.Fatalf("%d pages, %d entries, %d out of shape; want 3, 6, 1", pages, len(r.Entries), len(r.OutOfShape))
	}
	for _, e := range r.Entries {
		switch k := str(t, e["key"]); k {
		case "ace.huge":
			if string(e["value_too_large"]) != fmt.Sprint(len(huge)) || e["value"] != nil {
				t.Errorf("oversized value: %v", e)
			}
		default:
			if string(e["value"]) != stored[k] {
				t.Errorf("%s: value of %d bytes, want %d", k, len(e["value"]), len(stored[k]))
			}
		}
	}
	// A page past the end is empty, and says how many there are.
	last, _ := askRaw(t, nc, []byte(`{"what":"applied","page":9}`))
	if last.Error != "" || len(last.Entries) != 0 || last.Pages != 3 {
		t.Errorf("page past the end: %+v", last)
	}
}

// A need's key whose kind no template may name ([a-z][a-z0-9-]*, SPEC
// §4.1), or whose name is longer than any client takes, is out of the
// needs bucket's shape: said in out_of_shape with why, not listed as a
// need (no client writes one), and the sweep makes it an out-of-shape
// finding rather than a need of an unknown owner.
func TestANeedKeyWithAKindNoTemplateMayNameIsOutOfShape(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	needs := bucket(t, js, spec.NeedsBucket)
	long := strings.Repeat("z", 300)
	want := map[string]string{
		"n6.cc.Config.x":       `kind "Config" is not [a-z][a-z0-9-]*`,
		"n6.cc.9x.y":           `kind "9x" is not`,
		"n6.cc.con_fig.z":      `kind "con_fig" is not`,
		"n6.cc.a=3Ab.w":        `kind "a:b" is not`,
		"n6.cc.config." + long: "name: 300 bytes encoded, over 255",
		spec.EncodeKey("n6", "cc", "config", "k"): "",
	}
	for k := range want {
		put(t, needs, k, `{"state":"waiting","why":"w"}`)
	}
	serveQuery(t, nc, js)
	r, _ := ask(t, nc, map[string]any{"what": "needs", "node": "n6"})
	if len(r.Entries) != 1 || str(t, r.Entries[0]["key"]) != "n6.cc.config.k" {
		t.Errorf("entries: want n6.cc.config.k alone: %v", r.Entries)
	}
	said := map[string]string{}
	for _, o := range r.OutOfShape {
		said[o.Key] = o.Why
	}
	for k, why := range want {
		if why != "" && !strings.Contains(said[k], why) {
			t.Errorf("%.40s…: out_of_shape says %q, want %q", k, said[k], why)
		}
	}
}
