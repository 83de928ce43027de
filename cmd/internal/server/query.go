package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// queryQueue is the queue group of the verb: with several servers on one
// bus, each request is answered once.
const queryQueue = "mesh-provisioner"

// maxConcurrentQueries bounds how many requests are read at once.
const maxConcurrentQueries = 4

// shape is the shape of a bucket the verb reads: its key's, one name per
// token, and (but for the registry, the server's own) its value's: value
// says how a value is out of shape for its key's decoded tokens, "" when it
// is not (see values.go).
type shape struct {
	bucket string
	tokens []string
	value  func(key []string, value []byte) (why string)
}

var shapes = map[string]shape{
	"registry": {spec.RegistryBucket, []string{"kind"}, nil},
	"needs":    {spec.NeedsBucket, []string{"node", "module", "kind", "name"}, whyOnly(checkNeed)},
	"applied":  {spec.AppliedBucket, []string{"node", "module"}, whyOnly(checkReport)},
	"collect":  {spec.CollectBucket, []string{"node", "collection", "contributor"}, whyOnly(checkItem)},
}

// whyOnly is a value check that keeps only its why.
func whyOnly[V any](check func([]string, []byte) (V, string)) func([]string, []byte) string {
	return func(key []string, value []byte) string {
		_, why := check(key, value)
		return why
	}
}

// Request is the verb's request. Every field is optional; What defaults to
// "registry". Node, Module, Contributor and Collection narrow the answer to
// keys whose token of that name is that value (Module stands for
// Contributor with what=collect); a field that is not a token of the asked
// bucket's keys (contributor for needs, node for the registry) is a bad
// request, as it is for the sweep: ignored, it answered the whole bucket
// to a request that meant a part of it. Page picks one page of a paged answer (see ServeQuery).
type Request struct {
	What        string `json:"what,omitempty"`
	Node        string `json:"node,omitempty"`
	Module      string `json:"module,omitempty"`
	Contributor string `json:"contributor,omitempty"`
	Collection  string `json:"collection,omitempty"`
	StoodAfter  string `json:"stood_after,omitempty"`
	Page        int    `json:"page,omitempty"`
}

// ServeQuery answers QuerySubject on nc (queue group "mesh-provisioner")
// until stop is called or ctx ends. It reads the provisioner's buckets and
// writes nothing.
//
// The request is a JSON Request (an empty body asks for the registry). The
// reply is
//
//	{"what": "needs", "page": 0, "pages": 1,
//	 "entries": [{"key": "ace.claude-code.config.model", "node": "ace",
//	              "module": "claude-code", "kind": "config", "name": "model",
//	              "value": {…}}],
//	 "out_of_shape": [{"key": "ace.m.config", "why": "3 tokens, want 4 (node.module.kind.name)"}]}
//
// with every key of the asked bucket that the narrowing selects, sorted by
// key: each entry carries its decoded tokens by name and its value (the
// stored JSON embedded as JSON, or, in the registry, a string when it is
// not JSON); a key that is not of the bucket's shape is listed in
// out_of_shape with why, never dropped. So is a key of the needs, applied
// or collect bucket whose value is not of that bucket's shape or
// disagrees with the key (a need whose module is not the key's, an item
// whose item is not a string: see values.go), its why naming the field,
// e.g. `value says module "x", key says "web"`. A bad request is answered
// {"error": "…"}.
//
// Paging: a reply never exceeds the connection's max payload. When the
// whole answer does not fit, it is cut into pages (entries first, then
// out_of_shape, in key order); the reply says "page" (0-based) and
// "pages". A client asks for page k by sending the same request with
// "page": k, for k = 1 … pages-1, and joins the lists; a page past the end
// is answered with empty lists. The pages after the first come from what
// page 0 read while it is kept (a minute; keptAnswers), so every key is
// seen once, as it stood when page 0 was asked; a later page asked after
// that reads the bucket afresh.
// An entry whose value alone would not fit carries "value_too_large": <bytes>
// instead of "value".
//
// What "sweep" (SPEC §6.2 r2), narrowed by node and module only and tuned
// by "stood_after" (a positive Go duration, default 10m), judges every need
// by who answers it and answers
//
//	{"what": "sweep", "at": "RFC 3339", "stood_after": "10m0s", "page": 0, "pages": 1,
//	 "summary": {"modules", "applied", "waiting", "failed", "needs": {"met", "waiting",
//	             "stood_asked", "failed"}, "out_of_shape", "orphans"},
//	 "missing_buckets": ["mesh-controller_assignments"],
//	 "findings": [{"verdict", "owner", "kind", "name", "why", "since", "count", "needs": [{"node", "module"}]}],
//	 "orphans": [{"bucket", "key", "why"}],
//	 "no_report": [{"node", "module"}],
//	 "failed_modules": [{"key", "node", "module", "reason", "at"}]}
//
// (see SweepReply). A need is failed, stood asked (waiting for longer
// than stood_after since its KV entry was written), waiting or met; its
// owner is the registry's for its kind (for bound, the provider the
// module's provisions entry names, else the one its why names), or
// "unknown (no registry entry)". Needs sharing verdict, owner, kind, name
// and why are one finding; met needs are counted, not listed. Findings
// come failed first, then stood asked, then by how many needs they hold. A
// key of the needs, applied or collect bucket out of shape, or whose value
// is out of shape as the verb's entries say it, is a finding of its own
// with verdict "out of shape" (never judged as a need, report or item),
// owned by mesh-provisioner-client, and so is an assignments key out of
// shape whose value carries a plan, owned by mesh-controller; a
// key whose node and module are assigned nowhere (or whose assignment
// carries no plan) is an orphan, neither judged nor counted. A bucket that
// does not exist yet is named in missing_buckets and judged as empty
// (without the assignments bucket no orphan is judged). The head stands on
// every page; findings, then orphans, then no_report (the modules
// assigned with a plan whose node wrote no report, summary.no_report
// counts them and summary.no_report_stood those assigned longer than
// stood_after ago: an addition to SPEC's reply; a module whose report is
// out of shape is among summary.modules, counted in
// summary.report_out_of_shape and, written longer than stood_after ago,
// report_out_of_shape_stood), then failed_modules (the
// modules summary.failed counts, by key, with their report's reason and
// at: an addition too) are paged as entries are, and the
// pages after the first come from the sweep page 0 made while it is kept
// (a minute), so that all pages are of one sweep ("at" says which). A
// finding whose needs would not fit in a page is paged too: its parts,
// each the finding with more of its needs and, after the first,
// "continued": true (findingParts); "needs_left_out" says only what a
// part could not hold beside a why too long for a page. AskSweep asks
// and joins the pages, and the parts.
func ServeQuery(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, log zerolog.Logger) (stop func(), err error) {
	return serveQueryWith(ctx, nc, js, log, newSweepCache(js), nil)
}

// serveQueryWith is ServeQuery with the sweeps shared (with the metrics) and
// each request counted in stats (nil: not counted).
func serveQueryWith(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, log zerolog.Logger, sweeps *sweepCache, stats *Stats) (stop func(), err error) {
	v := &verb{js: js, sweeps: sweeps, answers: newKeptAnswers()}
	var (
		mu      sync.Mutex
		stopped bool
		wg      sync.WaitGroup
		slots   = make(chan struct{}, maxConcurrentQueries)
	)
	hctx := context.WithoutCancel(ctx)
	sub, err := nc.QueueSubscribe(spec.QuerySubject, queryQueue, func(m *nats.Msg) {
		if m.Reply == "" {
			return // nobody to answer
		}
		if m.Subject != spec.QuerySubject || m.Header.Get(jetstream.StreamHeader) != "" {
			// A JetStream consumer's delivery (it keeps the stream's
			// subject; nats-server checks no deliver subject against its
			// creator's rights, so a client that may not ask has one ask
			// for it) or a stream's republish: no query, not answered.
			return
		}
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		wg.Add(1)
		mu.Unlock()
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			rctx, cancel := context.WithTimeout(hctx, readTimeout+5*time.Second)
			defer cancel()
			limit := maxPayload(nc)
			reply, what, ok := v.answer(rctx, m.Data, limit)
			if len(reply) > limit {
				log.Warn().Str("what", what).Int("bytes", len(reply)).Int("max_payload", limit).Msg("query reply too large for the bus: answered with an error")
				reply, ok = tooLargeReply(len(reply), limit), false
			}
			stats.request(what, ok)
			if err := m.Respond(reply); err != nil {
				log.Warn().Err(err).Str("subject", spec.QuerySubject).Int("bytes", len(reply)).Msg("query reply not sent")
			}
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", spec.QuerySubject, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = sub.Unsubscribe()
			mu.Lock()
			stopped = true
			mu.Unlock()
			wg.Wait()
		})
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return stop, nil
}

func maxPayload(nc *nats.Conn) int {
	if mp := nc.MaxPayload(); mp > 0 {
		return int(mp)
	}
	return 1 << 20
}

// verb answers the requests of one ServeQuery.
type verb struct {
	js      jetstream.JetStream
	sweeps  *sweepCache
	answers *keptAnswers
}

// answer builds the reply to one request body: a page, or {"error"} (then
// ok is false). what is the request's what, "" when it named none known.
func (v *verb) answer(ctx context.Context, body []byte, limit int) (reply []byte, what string, ok bool) {
	req, err := parseRequest(body)
	if err != nil {
		return errorReply(err), req.What, false
	}
	if req.What == "sweep" {
		reply, err = v.answerSweep(ctx, req, limit)
	} else {
		reply, err = v.answerBucket(ctx, req, limit)
	}
	if err != nil {
		return errorReply(err), req.What, false
	}
	return reply, req.What, true
}

// answerBucket answers what registry, needs, applied or collect: page 0
// from the bucket read now, the pages after it from what page 0 read while
// that is kept (else from the bucket read now).
func (v *verb) answerBucket(ctx context.Context, req Request, limit int) ([]byte, error) {
	if req.Page > 0 {
		if a, ok := v.answers.get(req, limit); ok {
			return pageReply(req.What, req.Page, a.entries, a.outOfShape, limit), nil
		}
	}
	a, err := readAnswer(ctx, v.js, req, limit)
	if err != nil {
		return nil, err
	}
	b, pages := pageReplyOf(req.What, req.Page, a.entries, a.outOfShape, limit)
	if req.Page == 0 {
		v.answers.keep(req, limit, a, pages)
	}
	return b, nil
}

// readAnswer reads the keys of the bucket req asks for, narrowed, as the
// answer's entries and out_of_shape.
func readAnswer(ctx context.Context, js jetstream.JetStream, req Request, limit int) (*keptAnswer, error) {
	sh := shapes[req.What]
	narrow, err := narrowing(req)
	if err != nil {
		return nil, err
	}
	kv, err := openBucket(ctx, js, sh.bucket)
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("bucket %s does not exist yet", sh.bucket)
		}
		if isNotPermitted(err) {
			return nil, err
		}
		return nil, fmt.Errorf("opening bucket %s: %w", sh.bucket, err)
	}
	latest, err := readRefusable(ctx, js, kv, sh.bucket, filters(narrow), false)
	if err != nil {
		return nil, err
	}
	var entries, outOfShape [][]byte
	for _, e := range sortedEntries(latest) {
		toks := strings.Split(e.Key(), ".")
		if !selected(toks, narrow) {
			continue
		}
		decoded, why := decodeShape(toks, sh.tokens)
		if why == "" && sh.value != nil {
			why = sh.value(decoded, e.Value())
		}
		if why != "" {
			outOfShape = append(outOfShape, oosJSON(e.Key(), why))
			continue
		}
		entries = append(entries, entryJSON(e.Key(), sh.tokens, decoded, e.Value(), limit))
	}
	return &keptAnswer{entries: entries, outOfShape: outOfShape}, nil
}

// maxEchoed bounds what of a request's bytes a decoding error quotes: the
// refusal must fit the bus whatever the request holds (each field the
// verb quotes itself is cut to maxQuoted, see quoted).
const maxEchoed = 2 * maxQuoted

// parseRequest reads a request: strict JSON (unknown fields and fields of
// the wrong type refused), what defaulted and checked. An empty body is
// the default query; JSON that is no object is refused, null too
// (encoding/json would read it as {}, so a client that marshals a nil
// request would be told the registry instead of its mistake).
func parseRequest(body []byte) (Request, error) {
	var req Request
	if t := bytes.TrimSpace(body); len(t) > 0 {
		if bytes.Equal(t, []byte("null")) {
			return req, fmt.Errorf("request is not a query: null, not a JSON object")
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			// Cut: encoding/json quotes an unknown field's name whole.
			return req, fmt.Errorf("request is not a query: %s", spec.Cut(err.Error(), maxEchoed))
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return req, fmt.Errorf("request is not a query: data after the JSON object")
		}
		if err := checkFieldNames(body); err != nil {
			return req, err
		}
	}
	if req.What == "" {
		req.What = "registry"
	}
	if _, ok := shapes[req.What]; !ok && req.What != "sweep" {
		what := req.What
		req.What = ""
		return req, fmt.Errorf("what %s is not one of registry, needs, applied, collect, sweep", quoted(what))
	}
	if req.StoodAfter != "" && req.What != "sweep" {
		return req, fmt.Errorf("stood_after is for what sweep, not %s", req.What)
	}
	if req.Page < 0 {
		return req, fmt.Errorf("page %d is negative", req.Page)
	}
	if err := checkNameLens(req); err != nil {
		return req, err
	}
	return req, nil
}

// narrowing maps token positions of the asked bucket's shape to the
// encoded token a key must hold there.
func narrowing(req Request) (map[int]string, error) {
	sh := shapes[req.What]
	given := map[string]string{}
	if req.Node != "" {
		given["node"] = req.Node
	}
	if req.Collection != "" {
		given["collection"] = req.Collection
	}
	if req.Contributor != "" {
		given["contributor"] = req.Contributor
	}
	if req.Module != "" {
		if req.What == "collect" {
			if req.Contributor != "" && req.Contributor != req.Module {
				return nil, fmt.Errorf("module %s and contributor %s disagree (module stands for contributor in collect)", quoted(req.Module), quoted(req.Contributor))
			}
			given["contributor"] = req.Module
		} else {
			given["module"] = req.Module
		}
	}
	narrow := map[int]string{}
	for name, v := range given {
		pos := -1
		for i, t := range sh.tokens {
			if t == name {
				pos = i
			}
		}
		if pos < 0 {
			// Not a token of this bucket's keys: it would narrow nothing,
			// and the whole bucket answered to a request that meant a part
			// of it (an operator asking for contributor zsh's needs got
			// every need of the mesh). Said, as the sweep says it.
			return nil, fmt.Errorf("%s narrows nothing in %s, whose keys are %s: narrow it by %s", name, req.What,
				strings.Join(sh.tokens, "."), strings.Join(narrowable(req.What), ", "))
		}
		narrow[pos] = spec.EncodeToken(v)
	}
	return narrow, nil
}

// narrowable are the request's fields that narrow what.
func narrowable(what string) []string {
	var out []string
	for _, t := range shapes[what].tokens {
		if t == "node" || t == "module" || t == "collection" || t == "contributor" {
			out = append(out, t)
		}
	}
	if what == "collect" {
		out = append(out, "module (as contributor)")
	}
	if len(out) == 0 {
		return []string{"nothing (it is answered whole)"}
	}
	return out
}

// filters turns a narrowing into watch filters: the narrowed tokens up to
// the last one ('*' between), alone and followed by '>', so that keys of
// that prefix with too many tokens are read too (and said out of shape).
func filters(narrow map[int]string) []string {
	last := -1
	for pos := range narrow {
		last = max(last, pos)
	}
	if last < 0 {
		return nil
	}
	toks := make([]string, last+1)
	for i := range toks {
		if v, ok := narrow[i]; ok {
			toks[i] = v
		} else {
			toks[i] = "*"
		}
	}
	prefix := strings.Join(toks, ".")
	return []string{prefix, prefix + ".>"}
}

// selected says whether a key's raw tokens match the narrowing.
func selected(toks []string, narrow map[int]string) bool {
	for pos, v := range narrow {
		if pos >= len(toks) || toks[pos] != v {
			return false
		}
	}
	return true
}

// decodeShape decodes a key's tokens against its bucket's shape; why is
// empty when the key is in shape.
func decodeShape(toks, names []string) (decoded []string, why string) {
	if len(toks) != len(names) {
		return nil, fmt.Sprintf("%d tokens, want %d (%s)", len(toks), len(names), strings.Join(names, "."))
	}
	decoded = make([]string, len(toks))
	for i, t := range toks {
		v, err := spec.DecodeToken(t)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", names[i], err)
		}
		// What no client writes: a kind no template may name (SPEC
		// §4.1), a name longer than any a client takes.
		if names[i] == "kind" && !spec.ValidKind(v) {
			return nil, fmt.Sprintf("kind %q is not [a-z][a-z0-9-]* (SPEC §4.1)", spec.Cut(v, 64))
		}
		if len(t) > spec.MaxNameBytes {
			return nil, fmt.Sprintf("%s: %d bytes encoded, over %d", names[i], len(t), spec.MaxNameBytes)
		}
		decoded[i] = v
	}
	return decoded, ""
}
