package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SweepParams narrow and tune one sweep: Node and Module (either, both or
// neither) pick the needs, reports and items judged; a need that has waited
// longer than StoodAfter stood asked.
type SweepParams struct {
	Node, Module string
	StoodAfter   time.Duration
}

// needLabels are the labels of mesh_provisioner_needs.
type needLabels struct{ verdict, kind, owner string }

// sweepResult is one sweep: the whole reply (every finding and orphan) and
// what the metrics count besides.
type sweepResult struct {
	reply   SweepReply
	at      time.Time
	needs   map[needLabels]int // met needs too, and out-of-shape need keys
	modules map[string]int     // by report state
}

// Owners that are not a domain's name.
const (
	ownerNoRegistry = "unknown (no registry entry)"
	ownerClient     = "mesh-provisioner-client" // the writer of a key out of shape
	providerOwner   = "<provider>"              // the registry's owner of bound
	// ownerNoProvider is mesh_provisioner_needs' owner of a bound need
	// whose provider is not known ("unknown (no provisions entry for X)"
	// in its finding): one label value whatever X, as kindLabel's.
	ownerNoProvider = "unknown (no provisions entry)"
)

// sweep judges every need, report and item the params select (SPEC §6.2).
// A bucket that does not exist yet is named in MissingBuckets, one the bus
// refuses the server in UnreadableBuckets, and either is judged as empty
// (orphans are not judged without the assignments bucket); only a bucket
// that cannot be read otherwise fails the sweep. A need, report or item of a
// module assigned nowhere is an orphan and is neither judged nor counted.
// One whose key is out of shape, or whose value is (checkNeed,
// checkReport, checkItem: not of its bucket's shape, or disagreeing with
// its key), is a finding "out of shape" and is not judged.
func sweep(ctx context.Context, js jetstream.JetStream, p SweepParams, now time.Time) (*sweepResult, error) {
	if p.StoodAfter <= 0 {
		p.StoodAfter, _ = time.ParseDuration(DefaultStoodAfter)
	}
	s := &sweeper{p: p, now: now, owners: map[string]string{}, plans: map[NodeModule]assigned{},
		res:    &sweepResult{at: now, needs: map[needLabels]int{}, modules: map[string]int{}},
		groups: map[groupKey]*group{}, reported: map[NodeModule]bool{}}
	s.res.reply = SweepReply{What: "sweep", At: now.UTC().Format(time.RFC3339Nano), StoodAfter: p.StoodAfter.String(),
		Findings: []Finding{}, Orphans: []Orphan{}, NoReport: []NodeModule{}, FailedModules: []FailedModule{}}

	steps := []struct {
		bucket string
		what   string // the verb's name of the bucket, for narrowing; "" reads it whole
		read   func([]jetstream.KeyValueEntry)
	}{
		{spec.RegistryBucket, "", each(s.registryEntry)},
		{spec.AssignmentsBucket, "", each(s.assignment)},
		{spec.NeedsBucket, "needs", s.needs},
		{spec.AppliedBucket, "applied", each(s.report)},
		{spec.CollectBucket, "collect", each(s.item)},
	}
	// The buckets are read at once, then judged in order: the registry
	// and the plans first, for the owners and orphans.
	read := make([]bucketRead, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() { read[i] = s.fetch(ctx, js, st.bucket, st.what) })
	}
	wg.Wait()
	keysNamed := false // a key of the needs, applied or collect bucket bears the narrowing's names
	for i, st := range steps {
		r := read[i]
		switch {
		case r.err != nil:
			return nil, r.err
		case r.missing:
			s.res.reply.MissingBuckets = append(s.res.reply.MissingBuckets, st.bucket)
			continue
		case r.refused:
			s.res.reply.UnreadableBuckets = append(s.res.reply.UnreadableBuckets, st.bucket)
			continue
		}
		if st.bucket == spec.AssignmentsBucket {
			s.assignments = true
		}
		if st.bucket == spec.NeedsBucket {
			s.needKeys = r.entries // a report's waits are looked up in it (moduleWait)
		}
		sel := make([]jetstream.KeyValueEntry, 0, len(r.entries))
		for _, e := range r.entries {
			if len(r.narrow) == 0 || selected(strings.Split(e.Key(), "."), r.narrow) {
				sel = append(sel, e)
			}
		}
		st.read(sel)
		keysNamed = keysNamed || st.what != "" && len(sel) > 0
	}
	s.finish()
	s.res.reply.NothingNamed = s.nothingNamed(keysNamed)
	s.res.reply.NoPlan = s.noPlan()
	return s.res, nil
}

// assigned is what the sweep keeps of an assignment: whether it carries a
// plan, and its provisions entries (to find a bound need's provider).
type assigned struct {
	plan       bool
	provisions []provisionRef
	at         time.Time // when the assignment was last written (its KV entry's time)
}

type provisionRef struct {
	Provision string `json:"provision"`
	Provider  string `json:"provider"`
	Local     string `json:"local"`
}

type groupKey struct{ verdict, owner, kind, name, why string }

type group struct {
	since time.Time
	needs []NodeModule
	why   string // the why as a client wrote it, when every need of the group wrote the same
	whys  bool   // the needs wrote different whys (that differ only by their own key)
}

// sharedWhy is a need's why with its own <node>.<module> key written as
// the placeholder "<node>.<module>", so that needs held back by one cause
// (a provider refusing every bind: "gitea_bound ace.cc.gitea-read: refused
// by the provider: …" on every node) group into one finding; and so is
// the node and module of its own credential's vault name (sharedVaultWhy).
func sharedWhy(why, node, module string) string {
	why = sharedVaultWhy(why, node, module)
	own := spec.EncodeKey(node, module) + "."
	if !strings.Contains(why, own) {
		return why
	}
	return strings.ReplaceAll(why, " "+own, " <node>.<module>.")
}

// sharedVaultWhy is a need's why about its own provisions entry's
// credential ("vault provision/<provider>/<provision>/<node>/<module>[/<local>]: …",
// as the client writes it) with that node and module written as the
// placeholders "<node>" and "<module>": a credential the vault holds for
// no consumer of a provision (the provider issued none) is one finding
// naming every module it holds back, as a provider refusing every bind
// is, not one finding per node. Any other why is returned as it is.
func sharedVaultWhy(why, node, module string) string {
	prefix := "vault " + spec.VaultProvision + "/"
	rest, ok := strings.CutPrefix(why, prefix)
	if !ok {
		return why
	}
	name, tail, ok := strings.Cut(rest, ": ")
	if !ok {
		return why
	}
	parts := strings.Split(name, "/") // provider, provision, node, module[, local]
	if len(parts) < 4 || len(parts) > 5 || parts[2] != node || parts[3] != module {
		return why
	}
	parts[2], parts[3] = "<node>", "<module>"
	return prefix + strings.Join(parts, "/") + ": " + tail
}

type sweeper struct {
	p           SweepParams
	now         time.Time
	res         *sweepResult
	assignments bool // the assignments bucket exists
	owners      map[string]string
	plans       map[NodeModule]assigned
	groups      map[groupKey]*group
	oos         []Finding
	reported    map[NodeModule]bool                // the modules with a report in the applied bucket
	onNodes     map[string][]string                // the nodes each module is assigned on with a plan (whyUnassigned)
	needKeys    map[string]jetstream.KeyValueEntry // the needs bucket as read, by key (nil: not read)
}

// bucketRead is what fetch read of one bucket.
type bucketRead struct {
	entries map[string]jetstream.KeyValueEntry
	narrow  map[int]string
	missing bool
	refused bool // the bus refuses the server the bucket
	err     error
}

// fetch reads bucket, narrowed as the verb narrows what (when what is not
// empty).
func (s *sweeper) fetch(ctx context.Context, js jetstream.JetStream, bucket, what string) (r bucketRead) {
	kv, err := openBucket(ctx, js, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return bucketRead{missing: true}
	}
	if isNotPermitted(err) {
		return bucketRead{refused: true}
	}
	if err != nil {
		return bucketRead{err: fmt.Errorf("opening bucket %s: %w", bucket, err)}
	}
	if what != "" {
		if r.narrow, r.err = narrowing(Request{What: what, Node: s.p.Node, Module: s.p.Module}); r.err != nil {
			return r
		}
	}
	r.entries, r.err = readRefusable(ctx, js, kv, bucket, filters(r.narrow), false)
	if isNotPermitted(r.err) {
		return bucketRead{refused: true}
	}
	return r
}

func (s *sweeper) registryEntry(e jetstream.KeyValueEntry) {
	var entry Entry
	if json.Unmarshal(e.Value(), &entry) != nil || entry.Owner == "" {
		return // no owner to take from it: the kind's needs say "no registry entry"
	}
	if d, why := decodeShape(strings.Split(e.Key(), "."), shapes["registry"].tokens); why == "" {
		s.owners[d[0]] = entry.Owner
	}
}

func (s *sweeper) assignment(e jetstream.KeyValueEntry) {
	d, why := decodeShape(strings.Split(e.Key(), "."), shapes["applied"].tokens)
	if why != "" {
		s.assignmentOutOfShape(e, why) // said only when it carries a plan
		return
	}
	var v struct {
		Provisioning *struct {
			Provisions []provisionRef `json:"provisions"`
		} `json:"provisioning"`
	}
	a := assigned{plan: true, at: e.Created()}
	if t := bytes.TrimSpace(e.Value()); len(t) > 0 && t[0] != '{' && json.Valid(t) {
		// JSON that is not an object carries no plan: its client ignores
		// it (nodes.ParseAssignment, SPEC §3 r2) and writes no report.
		a.plan = false
	} else if err := json.Unmarshal(e.Value(), &v); err == nil {
		// A value that does not parse is still assigned: its client fails the module.
		// A plan followed by a null under its name is the client's to
		// refuse (spec.NamesAPlan): assigned with a plan too.
		a.plan = v.Provisioning != nil || spec.NamesAPlan(e.Value())
		if v.Provisioning != nil {
			a.provisions = v.Provisioning.Provisions
		}
	}
	s.plans[NodeModule{d[0], d[1]}] = a
}

// orphan says why node/module's keys are orphans, or "" when they are not.
func (s *sweeper) orphan(node, module string) string {
	if !s.assignments {
		return ""
	}
	a, ok := s.plans[NodeModule{node, module}]
	switch {
	case !ok:
		return s.whyUnassigned(module)
	case !a.plan:
		return "assignment carries no provisioning plan"
	}
	return ""
}

// outOfShape makes e, a key of bucket, a finding out of shape, since its
// entry was written (every finding says since when, as SPEC §6.2's do).
func (s *sweeper) outOfShape(bucket string, e jetstream.KeyValueEntry, why string) {
	s.oos = append(s.oos, Finding{Verdict: VerdictOutOfShape, Owner: ownerClient, Bucket: bucket, Key: e.Key(), Why: why,
		Since: e.Created().UTC().Format(time.RFC3339), Count: 1, Needs: []NodeModule{}})
}

func (s *sweeper) addOrphan(bucket, key, why string) {
	s.res.reply.Orphans = append(s.res.reply.Orphans, Orphan{Bucket: bucket, Key: key, Why: why})
}

func each(read func(jetstream.KeyValueEntry)) func([]jetstream.KeyValueEntry) {
	return func(es []jetstream.KeyValueEntry) {
		for _, e := range es {
			read(e)
		}
	}
}

// needRead is a need as the sweep reads it: its key decoded and its value
// checked (checkNeed).
type needRead struct {
	key      []string // decoded, when keyWhy is empty
	keyWhy   string   // the key is out of shape
	v        needValue
	valueWhy string // the value is out of shape
}

// needs judges the needs read. Their keys and values, most of the sweep's
// work in a large mesh, are decoded and checked on every core first.
func (s *sweeper) needs(es []jetstream.KeyValueEntry) {
	reads := make([]needRead, len(es))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(es); i += workers {
				r := &reads[i]
				if r.key, r.keyWhy = decodeShape(strings.Split(es[i].Key(), "."), shapes["needs"].tokens); r.keyWhy == "" {
					r.v, r.valueWhy = checkNeed(r.key, es[i].Value())
				}
			}
		})
	}
	wg.Wait()
	for i, e := range es {
		s.need(e, reads[i])
	}
}

func (s *sweeper) need(e jetstream.KeyValueEntry, r needRead) {
	if r.keyWhy != "" {
		s.outOfShape(spec.NeedsBucket, e, r.keyWhy)
		// Labelled as its finding says (the writer, ownerClient) and,
		// its kind unreadable, as a kind the registry does not name: an
		// empty label value is no label to Prometheus.
		s.res.needs[needLabels{verdict: "out_of_shape", kind: kindUnknown, owner: ownerClient}]++
		return
	}
	node, module, kind, name := r.key[0], r.key[1], r.key[2], r.key[3]
	if o := s.orphan(node, module); o != "" {
		s.addOrphan(spec.NeedsBucket, e.Key(), o)
		return
	}
	if r.valueWhy != "" {
		s.outOfShape(spec.NeedsBucket, e, r.valueWhy)
		s.res.needs[needLabels{verdict: "out_of_shape", kind: s.kindLabel(kind), owner: ownerClient}]++
		return
	}
	v := r.v
	verdict := ""
	switch v.State {
	case "failed":
		verdict = VerdictFailed
		s.res.reply.Summary.Needs.Failed++
	case "waiting":
		verdict = VerdictWaiting
		if s.now.Sub(e.Created()) > s.p.StoodAfter {
			verdict = VerdictStoodAsked
			s.res.reply.Summary.Needs.StoodAsked++
		} else {
			s.res.reply.Summary.Needs.Waiting++
		}
	default: // "met": checkNeed let no other state by
		verdict = VerdictMet
		s.res.reply.Summary.Needs.Met++
	}
	owner := s.owner(kind, name, v.Why, node, module)
	s.res.needs[needLabels{metricVerdict(verdict), s.kindLabel(kind), ownerLabel(owner)}]++
	if verdict == VerdictMet {
		return
	}
	s.group(groupKey{verdict, owner, kind, name, sharedWhy(v.Why, node, module)}, e, v.Why, node, module)
}

// group adds node/module's entry e, which says why, to the finding of k.
func (s *sweeper) group(k groupKey, e jetstream.KeyValueEntry, why, node, module string) {
	g := s.groups[k]
	if g == nil {
		g = &group{since: e.Created(), why: why}
		s.groups[k] = g
	}
	g.whys = g.whys || g.why != why
	if e.Created().Before(g.since) {
		g.since = e.Created()
	}
	g.needs = append(g.needs, NodeModule{node, module})
}

// metricVerdict is a verdict as a metric's label value: one word.
func metricVerdict(v string) string { return strings.ReplaceAll(v, " ", "_") }

// owner is the domain that answers kind, from the registry; for a kind the
// registry gives to "<provider>" (bound), the provider module.
// kindLabel is kind as mesh_provisioner_needs labels it: a kind the
// registry does not name is "unknown". A template may name any number of
// such kinds (each a need, failed), and a label value each would grow the
// metric's series without bound; the sweep's findings still name each.
func (s *sweeper) kindLabel(kind string) string {
	if _, ok := s.owners[kind]; !ok {
		return kindUnknown
	}
	return kind
}

// kindUnknown is the kind label of a need whose kind the registry lacks.
const kindUnknown = "unknown"

func (s *sweeper) owner(kind, name, why, node, module string) string {
	o, ok := s.owners[kind]
	if !ok {
		return ownerNoRegistry
	}
	if o != providerOwner {
		return o
	}
	return s.provider(name, why, node, module)
}

// whyNamesProvider finds the provider in a bound need's why (SPEC §4.6's
// reasons), for a module whose plan no longer says.
var whyNamesProvider = []*regexp.Regexp{
	regexp.MustCompile(`\b([A-Za-z0-9/_-]+)_bound\b`),
	regexp.MustCompile(`^provider (\S+) is assigned nowhere`),
	regexp.MustCompile(`^(\S+) does not offer `),
	regexp.MustCompile(`^(\S+)'s offer `),
}

// provider finds who answers ${bound:X[/L]:K} for node/module: the
// provisions entry of the module's plan for X and L names it; failing
// that, the need's why.
func (s *sweeper) provider(name, why, node, module string) string {
	prov, _, _ := strings.Cut(name, ":")
	x, l, _ := strings.Cut(prov, "/")
	for _, p := range s.plans[NodeModule{node, module}].provisions {
		if p.Provision == x && p.Local == l && p.Provider != "" {
			return p.Provider
		}
	}
	for _, re := range whyNamesProvider {
		if m := re.FindStringSubmatch(why); m != nil {
			return m[1]
		}
	}
	return noProvisionsEntry + prov + ")"
}

// noProvisionsEntry begins the owner of a bound need whose provider the
// sweep cannot find.
const noProvisionsEntry = "unknown (no provisions entry for "

// ownerLabel is owner as mesh_provisioner_needs labels it: a bound need's
// unknown provider is ownerNoProvider, whatever its provision.
func ownerLabel(owner string) string {
	if strings.HasPrefix(owner, noProvisionsEntry) {
		return ownerNoProvider
	}
	return owner
}

func (s *sweeper) report(e jetstream.KeyValueEntry) {
	d, why := decodeShape(strings.Split(e.Key(), "."), shapes["applied"].tokens)
	if why != "" {
		s.outOfShape(spec.AppliedBucket, e, why)
		return
	}
	if o := s.orphan(d[0], d[1]); o != "" {
		s.addOrphan(spec.AppliedBucket, e.Key(), o)
		return
	}
	s.reported[NodeModule{d[0], d[1]}] = true
	v, why := checkReport(d, e.Value())
	if why != "" {
		s.reportOutOfShape(e, why)
		return
	}
	sum := &s.res.reply.Summary
	switch v.State {
	case "applied":
		sum.Applied++
	case "waiting":
		sum.Waiting++
	case "failed":
		sum.Failed++
		s.res.reply.FailedModules = append(s.res.reply.FailedModules,
			FailedModule{Key: e.Key(), Node: d[0], Module: d[1], Reason: v.Reason, At: v.At})
	default: // "removed": checkReport let no other state by
		sum.Removed++
	}
	sum.Modules++
	s.res.modules[v.State]++
	s.moduleWait(e, d[0], d[1], v)
}

func (s *sweeper) item(e jetstream.KeyValueEntry) {
	d, why := decodeShape(strings.Split(e.Key(), "."), shapes["collect"].tokens)
	if why != "" {
		s.outOfShape(spec.CollectBucket, e, why)
		return
	}
	if o := s.orphan(d[0], d[2]); o != "" { // the contributor is the module
		s.addOrphan(spec.CollectBucket, e.Key(), o)
		return
	}
	if _, why := checkItem(d, e.Value()); why != "" {
		s.outOfShape(spec.CollectBucket, e, why)
	}
}

// finish turns the groups into findings, worst first: failed, then stood
// asked, then the rest by how many needs they hold.
func (s *sweeper) finish() {
	r := &s.res.reply
	for nm, a := range s.plans {
		if !a.plan || s.reported[nm] || s.p.Node != "" && nm.Node != s.p.Node || s.p.Module != "" && nm.Module != s.p.Module {
			continue
		}
		r.Summary.NoReport++
		s.res.modules["no_report"]++
		r.NoReport = append(r.NoReport, nm)
		if s.now.Sub(a.at) > s.p.StoodAfter {
			r.Summary.NoReportStood++
		}
	}
	sort.Slice(r.NoReport, func(i, j int) bool { return lessNodeModule(r.NoReport[i], r.NoReport[j]) })
	sort.Slice(r.FailedModules, func(i, j int) bool { return r.FailedModules[i].Key < r.FailedModules[j].Key })
	for k, g := range s.groups {
		sort.Slice(g.needs, func(i, j int) bool { return lessNodeModule(g.needs[i], g.needs[j]) })
		why := g.why
		if g.whys {
			why = k.why
		}
		r.Findings = append(r.Findings, Finding{Verdict: k.verdict, Owner: k.owner, Kind: k.kind, Name: k.name,
			Why: why, Since: g.since.UTC().Format(time.RFC3339), Count: len(g.needs), Needs: g.needs})
	}
	r.Findings = append(r.Findings, s.oos...)
	rank := func(v string) int {
		switch v {
		case VerdictFailed:
			return 0
		case VerdictStoodAsked:
			return 1
		}
		return 2
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if ra, rb := rank(a.Verdict), rank(b.Verdict); ra != rb {
			return ra < rb
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		for _, c := range [][2]string{{a.Verdict, b.Verdict}, {a.Owner, b.Owner}, {a.Kind, b.Kind},
			{a.Name, b.Name}, {a.Bucket, b.Bucket}, {a.Key, b.Key}} {
			if c[0] != c[1] {
				return c[0] < c[1]
			}
		}
		return a.Why < b.Why
	})
	order := map[string]int{spec.NeedsBucket: 0, spec.AppliedBucket: 1, spec.CollectBucket: 2}
	sort.Slice(r.Orphans, func(i, j int) bool {
		a, b := r.Orphans[i], r.Orphans[j]
		if a.Bucket != b.Bucket {
			return order[a.Bucket] < order[b.Bucket]
		}
		return a.Key < b.Key
	})
	r.Summary.OutOfShape = len(s.oos)
	r.Summary.Orphans = len(r.Orphans)
}

// lessNodeModule orders modules by node, then module.
func lessNodeModule(a, b NodeModule) bool {
	return a.Node < b.Node || a.Node == b.Node && a.Module < b.Module
}
