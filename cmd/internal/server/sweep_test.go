package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func needJSON(node, module, kind, name, state, why string) string {
	b, _ := json.Marshal(map[string]string{"node": node, "module": module, "kind": kind, "name": name, "state": state, "why": why})
	return string(b)
}

func putNeed(t *testing.T, kv jetstream.KeyValue, node, module, kind, name, state, why string) {
	t.Helper()
	put(t, kv, spec.EncodeKey(node, module, kind, name), needJSON(node, module, kind, name, state, why))
}

// assignmentsKV makes the controller's bucket, as the lab does.
func assignmentsKV(t *testing.T, js jetstream.JetStream) jetstream.KeyValue {
	t.Helper()
	kv, err := js.CreateKeyValue(testCtx(t), jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// plantFleet fills every bucket the sweep reads with a small mesh in
// trouble, and returns the time just after the pause, before any need
// written after it: judged at that time, needs written before the pause
// are older than it by the pause, the rest not older at all, however long
// the writes after it take on a loaded machine.
func plantFleet(t *testing.T, js jetstream.JetStream, pause time.Duration) time.Time {
	t.Helper()
	ensureRegistered(t, js)
	as := assignmentsKV(t, js)
	gitea := `{"provisioning":{"provisions":[{"name":"t","provision":"gitea-read","provider":"gitea","credential":"token"}]}}`
	put(t, as, "ace.claude-code", gitea)
	put(t, as, "g14.claude-code", gitea)
	put(t, as, "novox.gitea", `{"provisioning":{"provides":[{"provision":"forge-account","answered_by":"helper"}]}}`)
	put(t, as, "ace.zsh", `{"provisioning":{}}`)
	put(t, as, "ace.noplan", `{"node":"ace","module":"noplan"}`)

	needs := bucket(t, js, spec.NeedsBucket)
	// Old: these have waited since before the pause.
	putNeed(t, needs, "ace", "claude-code", "bound", "gitea-read:url", "failed", "gitea does not offer gitea-read")
	putNeed(t, needs, "g14", "claude-code", "bound", "gitea-read:url", "failed", "gitea does not offer gitea-read")
	putNeed(t, needs, "novox", "gitea", "bound", "route:url", "waiting", "route-proxy_bound novox.gitea.route: not written yet")
	time.Sleep(pause)
	judged := time.Now()
	putNeed(t, needs, "ace", "claude-code", "config", "model", "met", "")
	putNeed(t, needs, "g14", "claude-code", "config", "model", "met", "")
	putNeed(t, needs, "ace", "claude-code", "config", "x", "waiting", "mesh-config_resolved has no x yet")
	putNeed(t, needs, "ace", "zsh", "config", "x", "waiting", "mesh-config_resolved has no x yet")
	putNeed(t, needs, "ace", "zsh", "collected", "shell:zsh:normal", "waiting", "no item yet")
	putNeed(t, needs, "ace", "zsh", "weird", "thing", "waiting", "no registry entry for weird")
	put(t, needs, "ace.m=ZZ.config.k", `{}`)
	put(t, needs, "ace.zsh.config.bad", `not json`)
	put(t, needs, "ace.zsh.config.st", needJSON("ace", "zsh", "config", "st", "sleeping", ""))
	putNeed(t, needs, "old", "gone", "config", "k", "waiting", "")
	putNeed(t, needs, "ace", "noplan", "config", "k", "waiting", "")

	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "ace.claude-code", `{"node":"ace","module":"claude-code","state":"failed"}`)
	put(t, applied, "g14.claude-code", `{"node":"g14","module":"claude-code","state":"failed"}`)
	put(t, applied, "novox.gitea", `{"node":"novox","module":"gitea","state":"waiting"}`)
	put(t, applied, "ace.zsh", `{"node":"ace","module":"zsh","state":"applied"}`)
	put(t, applied, "ace.zsh.extra", `{}`)
	put(t, applied, "old.gone", `{"node":"old","module":"gone","state":"applied"}`)

	collect := bucket(t, js, spec.CollectBucket)
	put(t, collect, "ace.shell=3Azsh.zsh", `{"collection":"shell:zsh","contributor":"zsh","item":"x"}`)
	put(t, collect, "ace.shell=3Azsh.claude-code", `nope`)
	put(t, collect, "old.shell=3Azsh.gone", `{"collection":"shell:zsh","contributor":"gone","item":"y"}`)
	return judged
}

// line is a finding in one line, for comparing.
func line(f Finding) string {
	var who []string
	for _, n := range f.Needs {
		who = append(who, n.Node+"/"+n.Module)
	}
	if f.Verdict == VerdictOutOfShape {
		return fmt.Sprintf("%s|%s|%s %s|%d", f.Verdict, f.Owner, f.Bucket, f.Key, f.Count)
	}
	return fmt.Sprintf("%s|%s|%s %s|%d|%s", f.Verdict, f.Owner, f.Kind, f.Name, f.Count, strings.Join(who, ","))
}

func lines(r SweepReply) string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, line(f))
	}
	return strings.Join(out, "\n")
}

func TestSweepGroupsOrdersAndJudges(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	now := plantFleet(t, js, 600*time.Millisecond)

	r, err := sweep(testCtx(t), js, SweepParams{StoodAfter: 500 * time.Millisecond}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Two sweeps in one second are told apart by their at (a page of one
	// is never joined to the other's).
	r2, err := sweep(testCtx(t), js, SweepParams{StoodAfter: 500 * time.Millisecond}, now.Add(time.Millisecond))
	if err != nil || r2.reply.At == r.reply.At {
		t.Fatalf("two sweeps a millisecond apart both say at %q (%v)", r.reply.At, err)
	}
	got := lines(r.reply)
	want := strings.Join([]string{
		"failed|gitea|bound gitea-read:url|2|ace/claude-code,g14/claude-code",
		"stood asked|route-proxy|bound route:url|1|novox/gitea",
		"waiting|mesh-config|config x|2|ace/claude-code,ace/zsh",
		"out of shape|mesh-provisioner-client|mesh-provisioner_applied ace.zsh.extra|1",
		"out of shape|mesh-provisioner-client|mesh-provisioner_collect ace.shell=3Azsh.claude-code|1",
		"out of shape|mesh-provisioner-client|mesh-provisioner_needs ace.m=ZZ.config.k|1",
		"out of shape|mesh-provisioner-client|mesh-provisioner_needs ace.zsh.config.bad|1",
		"out of shape|mesh-provisioner-client|mesh-provisioner_needs ace.zsh.config.st|1",
		"waiting|mesh-provisioner|collected shell:zsh:normal|1|ace/zsh",
		"waiting|unknown (no registry entry)|weird thing|1|ace/zsh",
	}, "\n")
	if got != want {
		t.Errorf("findings:\n%s\nwant\n%s", got, want)
	}
	f := r.reply.Findings[0]
	if f.Why != "gitea does not offer gitea-read" || f.Since == "" {
		t.Errorf("first finding: why %q since %q", f.Why, f.Since)
	}
	for _, f := range r.reply.Findings {
		if f.Verdict == VerdictOutOfShape && f.Why == "" {
			t.Errorf("out-of-shape %s has no why", f.Key)
		}
	}
	sum := r.reply.Summary
	wantSum := Summary{Modules: 4, Applied: 1, Waiting: 1, Failed: 2,
		Needs: NeedCounts{Met: 2, Waiting: 4, StoodAsked: 1, Failed: 2}, OutOfShape: 5, Orphans: 4}
	if sum != wantSum {
		t.Errorf("summary %+v\n   want %+v", sum, wantSum)
	}
	var orphans []string
	for _, o := range r.reply.Orphans {
		orphans = append(orphans, o.Bucket+" "+o.Key+": "+o.Why)
	}
	wantOrphans := []string{
		"mesh-provisioner_needs ace.noplan.config.k: assignment carries no provisioning plan",
		"mesh-provisioner_needs old.gone.config.k: module assigned nowhere",
		"mesh-provisioner_applied old.gone: module assigned nowhere",
		"mesh-provisioner_collect old.shell=3Azsh.gone: module assigned nowhere",
	}
	if fmtKeys(orphans) != fmtKeys(wantOrphans) {
		t.Errorf("orphans %s\n   want %s", fmtKeys(orphans), fmtKeys(wantOrphans))
	}
	if len(r.reply.MissingBuckets) != 0 {
		t.Errorf("missing buckets %v", r.reply.MissingBuckets)
	}
	// The metrics' counts: met needs too, by kind and owner.
	if n := r.needs[needLabels{"met", "config", "mesh-config"}]; n != 2 {
		t.Errorf("met config needs of mesh-config: %d, want 2", n)
	}
	if n := r.needs[needLabels{"stood_asked", "bound", "route-proxy"}]; n != 1 {
		t.Errorf("stood-asked bound needs of route-proxy: %d, want 1", n)
	}
}

func TestSweepVerbNarrowsAndJoinsPages(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	plantFleet(t, js, 0)
	serveQuery(t, nc, js)
	ctx := testCtx(t)

	r, err := AskSweep(ctx, nc, "ace", "", "1h")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		for _, n := range f.Needs {
			if n.Node != "ace" {
				t.Errorf("node ace's sweep holds %s", line(f))
			}
		}
		if f.Verdict == VerdictStoodAsked {
			t.Errorf("with stood_after 1h nothing stood asked: %s", line(f))
		}
	}
	if r.What != "sweep" || r.StoodAfter != "1h0m0s" || r.Summary.Modules != 2 || r.Summary.Needs.Failed != 1 || r.Summary.Orphans != 1 {
		t.Errorf("node ace: what %q stood_after %q summary %+v", r.What, r.StoodAfter, r.Summary)
	}
	r, err = AskSweep(ctx, nc, "", "claude-code", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.StoodAfter != "10m0s" || len(r.Findings) < 2 || line(r.Findings[0]) != "failed|gitea|bound gitea-read:url|2|ace/claude-code,g14/claude-code" {
		t.Errorf("module claude-code:\n%s", lines(r))
	}
	for _, f := range r.Findings {
		if strings.Contains(line(f), "zsh") && f.Verdict != VerdictOutOfShape {
			t.Errorf("module claude-code's sweep holds %s", line(f))
		}
	}

	for _, body := range []string{
		`{"what":"sweep","stood_after":"0s"}`,
		`{"what":"sweep","stood_after":"-1m"}`,
		`{"what":"sweep","stood_after":"soon"}`,
		`{"what":"sweep","collection":"x"}`,
		`{"what":"sweep","contributor":"x"}`,
		`{"what":"needs","stood_after":"1m"}`,
	} {
		if r, raw := askRaw(t, nc, []byte(body)); r.Error == "" {
			t.Errorf("%s answered %s, want an error", body, raw)
		}
	}
}

func TestSweepSaysWhichBucketIsMissing(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	needs, err := js.CreateKeyValue(testCtx(t), jetstream.KeyValueConfig{Bucket: spec.NeedsBucket})
	if err != nil {
		t.Fatal(err)
	}
	putNeed(t, needs, "ace", "m", "config", "k", "failed", "refused")
	serveQuery(t, nc, js)
	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil {
		t.Fatalf("a sweep with buckets missing failed: %v", err)
	}
	want := []string{spec.RegistryBucket, spec.AssignmentsBucket, spec.AppliedBucket, spec.CollectBucket}
	if fmtKeys(r.MissingBuckets) != fmtKeys(want) {
		t.Errorf("missing_buckets %v, want %v", r.MissingBuckets, want)
	}
	if len(r.Findings) != 1 || line(r.Findings[0]) != "failed|unknown (no registry entry)|config k|1|ace/m" {
		t.Errorf("findings:\n%s", lines(r))
	}
	if len(r.Orphans) != 0 {
		t.Errorf("orphans judged without the assignments bucket: %v", r.Orphans)
	}
}

func TestSweepPagesLargeAnswers(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 16 * 1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	assignmentsKV(t, js)
	// 300 findings of one need each, and one finding of 2,000 needs whose
	// list alone is larger than a page.
	ctx := testCtx(t)
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		m := fmt.Sprintf("module-%04d", i)
		must(t, ajs, "$KV."+spec.AssignmentsBucket+".ace."+m, `{"provisioning":{}}`)
		must(t, ajs, "$KV."+spec.NeedsBucket+".ace."+m+".config.shared", needJSON("ace", m, "config", "shared", "failed", "refused"))
		if i < 300 {
			must(t, ajs, "$KV."+spec.NeedsBucket+".ace."+m+".config.own", needJSON("ace", m, "config", "own", "failed", "refused "+m))
		}
		if i < 1500 { // a node gone quiet: assigned, no report, no need
			must(t, ajs, "$KV."+spec.AssignmentsBucket+".dead."+m, `{"provisioning":{}}`)
		}
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("puts not acknowledged")
	}
	serveQuery(t, nc, js)

	first, raw := askRaw(t, nc, []byte(`{"what":"sweep"}`))
	if first.Pages < 2 || len(raw) > int(nc.MaxPayload()) {
		t.Fatalf("page 0: %d pages, %d bytes", first.Pages, len(raw))
	}
	r, err := AskSweep(ctx, nc, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 301 || r.Summary.Needs.Failed != 2300 {
		t.Fatalf("%d findings, %d failed needs; want 301, 2300", len(r.Findings), r.Summary.Needs.Failed)
	}
	// The large finding is paged as a list is: its parts, one a page,
	// joined by AskSweep, every need named once.
	big := r.Findings[0]
	named := map[NodeModule]bool{}
	for _, nm := range big.Needs {
		named[nm] = true
	}
	if big.Count != 2000 || big.NeedsLeftOut != 0 || len(big.Needs) != 2000 || len(named) != 2000 || big.Continued {
		t.Errorf("the large finding: count %d, %d needs listed (%d distinct), %d left out", big.Count, len(big.Needs), len(named), big.NeedsLeftOut)
	}
	if !strings.Contains(string(raw), `"needs":[`) || strings.Contains(string(raw), `"needs_left_out"`) {
		t.Errorf("page 0 leaves needs out")
	}
	seen := map[string]bool{}
	for _, f := range r.Findings[1:] {
		if f.Count != 1 || len(f.Needs) != 1 || seen[f.Why] {
			t.Fatalf("finding %s repeated or cut", line(f))
		}
		seen[f.Why] = true
	}
	// The modules without a report are listed whole across the pages, in
	// order (ace's 2,000 each have a need but no report too).
	if len(r.NoReport) != 3500 || r.Summary.NoReport != 3500 {
		t.Fatalf("%d modules without a report listed (summary %d), want 3500", len(r.NoReport), r.Summary.NoReport)
	}
	for i, m := range r.NoReport[2000:] {
		if want := (NodeModule{"dead", fmt.Sprintf("module-%04d", i)}); m != want {
			t.Fatalf("no_report[%d] is %v, want %v", 2000+i, m, want)
		}
	}
}

func must(t *testing.T, js jetstream.JetStream, subject, v string) {
	t.Helper()
	if _, err := js.PublishAsync(subject, []byte(v)); err != nil {
		t.Fatal(err)
	}
}

// A provider refusing every bind writes one why per node, each naming its
// own key: grouped, they read as one cause.
func TestSharedWhyWritesTheNeedsOwnKeyAsAPlaceholder(t *testing.T) {
	for _, c := range []struct{ why, node, module, want string }{
		{"gitea_bound ace.cc.gitea-read: refused by the provider: no", "ace", "cc", "gitea_bound <node>.<module>.gitea-read: refused by the provider: no"},
		{"gitea does not offer gitea-read", "ace", "cc", "gitea does not offer gitea-read"},
		{"mesh-config_resolved g14.grafana.smtp-host: not written yet", "g14", "grafana", "mesh-config_resolved <node>.<module>.smtp-host: not written yet"},
		{"gitea_bound ace.ccx.gitea-read: other module", "ace", "cc", "gitea_bound ace.ccx.gitea-read: other module"},
	} {
		if got := sharedWhy(c.why, c.node, c.module); got != c.want {
			t.Errorf("sharedWhy(%q) = %q, want %q", c.why, got, c.want)
		}
	}
}

// TestSweepCacheKeepsFewPagedSweeps: the sweeps kept for the pages after
// the first are only those of more than one page, at most sweepsKept, none
// older than pagesKeptFor, however many params requesters choose; and a
// paged sweep still pages from one sweep.
func TestSweepCacheKeepsFewPagedSweeps(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 16 * 1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	assignmentsKV(t, js)
	ctx := testCtx(t)
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	// 300 findings on node ace: several pages of 16 KiB. Node n<i> has one
	// need each: a sweep of it is one page.
	for i := range 300 {
		m := fmt.Sprintf("module-%04d", i)
		must(t, ajs, "$KV."+spec.AssignmentsBucket+".ace."+m, `{"provisioning":{}}`)
		must(t, ajs, "$KV."+spec.NeedsBucket+".ace."+m+".config.own", needJSON("ace", m, "config", "own", "failed", "refused "+m))
		must(t, ajs, fmt.Sprintf("$KV.%s.n%d.m.config.k", spec.NeedsBucket, i), needJSON(fmt.Sprintf("n%d", i), "m", "config", "k", "failed", "x"))
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("puts not acknowledged")
	}
	sweeps := newSweepCache(js)
	stop, err := serveQueryWith(t.Context(), nc, js, quietLog(), sweeps, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	kept := func() int {
		sweeps.mu.Lock()
		defer sweeps.mu.Unlock()
		return len(sweeps.paged)
	}
	sweepReq := func(node, stood string, page int) SweepReply {
		t.Helper()
		body, _ := json.Marshal(Request{What: "sweep", Node: node, StoodAfter: stood, Page: page})
		m, err := nc.Request(spec.QuerySubject, body, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r SweepReply
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != "" {
			t.Fatalf("%s: %v %s", body, err, r.Error)
		}
		return r
	}

	for i := range 30 {
		if r := sweepReq(fmt.Sprintf("n%d", i), fmt.Sprintf("%dms", 600000+i), 0); r.Pages != 1 {
			t.Fatalf("node n%d: %d pages, want 1", i, r.Pages)
		}
	}
	if n := kept(); n != 0 {
		t.Errorf("30 sweeps of one page each: %d kept, want 0", n)
	}
	for i := range 30 {
		if r := sweepReq("", fmt.Sprintf("%dms", 600000+i), 0); r.Pages < 2 {
			t.Fatalf("whole mesh: %d pages, want several", r.Pages)
		}
	}
	if n := kept(); n != sweepsKept {
		t.Errorf("30 paged sweeps with distinct stood_after: %d kept, want %d", n, sweepsKept)
	}

	// Page 0, a few other sweeps meanwhile, a need written meanwhile: the
	// pages after the first are still of page 0's sweep.
	first := sweepReq("ace", "1h", 0)
	for i := range sweepsKept - 1 {
		sweepReq("", fmt.Sprintf("%dms", 700000+i), 0)
	}
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "module-0000", "config", "late", "failed", "late")
	all := first.Findings
	for page := 1; page < first.Pages; page++ {
		r := sweepReq("ace", "1h", page)
		if r.At != first.At || r.Pages != first.Pages {
			t.Fatalf("page %d is of the sweep at %s (%d pages), page 0 of the one at %s (%d pages)", page, r.At, r.Pages, first.At, first.Pages)
		}
		all = append(all, r.Findings...)
	}
	if len(all) != 300 {
		t.Errorf("pages of node ace joined: %d findings, want 300", len(all))
	}
	r, err := AskSweep(ctx, nc, "ace", "", "1h")
	if err != nil || len(r.Findings) != 301 {
		t.Errorf("a new sweep of node ace: %d findings (%v), want 301", len(r.Findings), err)
	}

	// Older than pagesKeptFor: dropped when the next sweep is kept, even
	// with no page asked of them.
	sweeps.mu.Lock()
	sweeps.now = func() time.Time { return time.Now().Add(2 * pagesKeptFor) }
	sweeps.mu.Unlock()
	sweepReq("", "5m", 0)
	if n := kept(); n != 1 {
		t.Errorf("after a sweep %s later: %d kept, want 1", 2*pagesKeptFor, n)
	}
}

// TestEveryFindingSaysSince: SPEC §6.2's findings each say since when;
// a key out of shape says since when its KV entry stands, so an operator
// tells a key written wrong a minute ago from one left for a month.
func TestEveryFindingSaysSince(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	before := time.Now().Add(-time.Second)
	plantFleet(t, js, 0)
	now := time.Now()
	r, err := sweep(testCtx(t), js, SweepParams{StoodAfter: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	oos := 0
	for _, f := range r.reply.Findings {
		if f.Verdict == VerdictOutOfShape {
			oos++
		}
		at, err := time.Parse(time.RFC3339, f.Since)
		if err != nil || at.Before(before.Truncate(time.Second)) || at.After(now) {
			t.Errorf("finding %s says since %q, want the time its entry was written (RFC 3339): %v", line(f), f.Since, err)
		}
	}
	if oos != 5 {
		t.Errorf("%d out-of-shape findings, want 5", oos)
	}
}
