package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/novox/mesh-provisioner/outputs/report"
)

// The verb's request (SPEC §6.2), whatever its bytes: refused with an
// error that says why, or taken as a query that, written again, reads the
// same; its narrowing gives watch filters a bucket takes.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"what": "registry"}`, `{"what": "needs", "node": "ace", "module": "claude-code"}`,
		`{"what": "collect", "node": "ace", "collection": "shell:zsh:normal", "contributor": "zsh"}`,
		`{"what": "collect", "module": "a", "contributor": "b"}`,
		`{"what": "sweep", "node": "ace", "module": "claude-code", "stood_after": "10m"}`,
		`{"what": "applied", "stood_after": "1s"}`, `{"what": "needs", "page": -1}`, `{"what": "needs", "page": 1e30}`,
		`{"what": "x"}`, `{"what": 7}`, `{"WHAT": "needs"}`, `{"other": 1}`, `{} {}`, `null`, `[]`, `"needs"`, `{`,
		`{"what": "needs", "node": "a.b", "module": "*"}`,
		`{"what": "needs", "node": "` + strings.Repeat("a", 2000) + `"}`, `{"` + strings.Repeat("w", 2000) + `": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseRequest(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q refused with an empty error", body)
			}
			if !json.Valid(errorReply(err)) {
				t.Fatalf("%q: error reply %q is not JSON", body, errorReply(err))
			}
			if len(errorReply(err)) > 1024 { // a refusal quotes the request cut: it fits any bus
				t.Fatalf("%.80q…: error reply of %d bytes", body, len(errorReply(err)))
			}
			return
		}
		if _, ok := shapes[req.What]; !ok && req.What != "sweep" {
			t.Fatalf("%q taken as what %q", body, req.What)
		}
		if req.Page < 0 || req.StoodAfter != "" && req.What != "sweep" {
			t.Fatalf("%q taken as %+v", body, req)
		}
		again, _ := json.Marshal(req)
		if r, err := parseRequest(again); err != nil || r != req {
			t.Fatalf("%q read as %+v; written again %s reads %+v, %v", body, req, again, r, err)
		}
		if req.What == "sweep" {
			return
		}
		narrow, err := narrowing(req)
		if err != nil {
			if !strings.Contains(err.Error(), "disagree") && !strings.Contains(err.Error(), "narrows nothing in "+req.What) {
				t.Fatalf("%q: narrowing refused: %v", body, err)
			}
			return
		}
		for _, fl := range filters(narrow) {
			for i, tok := range strings.Split(fl, ".") {
				if tok == "" || strings.ContainsAny(tok, " \t\r\n") || (tok == ">" && i != strings.Count(fl, ".")) ||
					tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>") {
					t.Fatalf("%q: filter %q is not one a bucket takes", body, fl)
				}
			}
		}
	})
}

// A key and value of the needs, applied or collect bucket (or the
// registry's), whatever their bytes: out of shape with a why, or an entry
// that is JSON and carries the key, its decoded tokens and the value.
func FuzzBucketEntry(f *testing.F) {
	f.Add(uint8(1), "ace.claude-code.config.model", []byte(`{"node":"ace","module":"claude-code","kind":"config","name":"model","state":"met","why":""}`))
	f.Add(uint8(1), "ace.claude-code.bound.gitea-read=3Aas", []byte(`{"state":"waiting","why":"gitea_bound ace.claude-code.gitea-read not written yet"}`))
	f.Add(uint8(1), "ace.m.config", []byte(`{}`))
	f.Add(uint8(1), "ace.m.config.k", []byte(`{"module":"x","state":"met"}`))
	f.Add(uint8(2), "ace.claude-code", []byte(`{"node":"ace","module":"claude-code","state":"applied","at":"2026-12-01T12:00:00Z","files":[{"path":"/etc/x","action":"written","digest":"sha256:00"}],"waiting":[],"reason":""}`))
	f.Add(uint8(2), "ace.claude-code", []byte(`{"state":"applied","files":{}}`))
	f.Add(uint8(3), "ace.shell=3Azsh=3Anormal.zsh", []byte(`{"collection":"shell:zsh:normal","contributor":"zsh","item":"alias ll='ls -l'\n"}`))
	f.Add(uint8(3), "ace.c.zsh", []byte(`{"collection":"c","contributor":"zsh"}`))
	f.Add(uint8(3), "ace.c.zsh", []byte(`null`))
	f.Add(uint8(0), "config", []byte(`{"kind":"config","owner":"mesh-config"}`))
	f.Add(uint8(0), "=41", []byte("not json \xff"))
	whats := []string{"registry", "needs", "applied", "collect"}
	f.Fuzz(func(t *testing.T, which uint8, key string, value []byte) {
		sh := shapes[whats[int(which)%len(whats)]]
		decoded, why := decodeShape(strings.Split(key, "."), sh.tokens)
		if why == "" && sh.value != nil {
			why = sh.value(decoded, value)
		}
		if why != "" {
			var o struct{ Key, Why string }
			b := oosJSON(key, why)
			if err := json.Unmarshal(b, &o); err != nil || o.Why != why || !validUTF8OrSame(key, o.Key) {
				t.Fatalf("%q: out of shape as %s (%v)", key, b, err)
			}
			return
		}
		b := entryJSON(key, sh.tokens, decoded, value, 1<<20)
		var e map[string]json.RawMessage
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%q = %q: entry %s is not JSON: %v", key, value, b, err)
		}
		var got string
		if json.Unmarshal(e["key"], &got) != nil || got != key {
			t.Fatalf("%q: entry %s carries key %s", key, b, e["key"])
		}
		for i, n := range sh.tokens {
			if json.Unmarshal(e[n], &got) != nil || got != decoded[i] {
				t.Fatalf("%q: entry %s carries %s %s, want %q", key, b, n, e[n], decoded[i])
			}
		}
		if raw, ok := e["value"]; json.Valid(value) && ok {
			var want, have any
			_ = json.Unmarshal(value, &want)
			_ = json.Unmarshal(raw, &have)
			if !reflect.DeepEqual(want, have) {
				t.Fatalf("%q: value %q carried as %s", key, value, raw)
			}
		} else if ok && utf8.Valid(value) {
			if json.Unmarshal(raw, &got) != nil || got != string(value) {
				t.Fatalf("%q: value %q carried as %s", key, value, raw)
			}
		}
	})
}

// validUTF8OrSame: a key carried in JSON reads back as itself, or (not
// UTF-8 text; NATS takes none such) as JSON reads it.
func validUTF8OrSame(key, got string) bool {
	var want string
	b, _ := json.Marshal(key)
	_ = json.Unmarshal(b, &want)
	return got == key || got == want
}

// What a client writes (outputs/report's Need, Report and Item, as
// encoding/json writes them: encodeReport is held equal to it) is in shape
// for the server, whatever names and texts it carries: a client's value is
// never said out of shape, nor judged apart from its key.
func FuzzClientValuesAreInShape(f *testing.F) {
	f.Add("ace", "claude-code", "bound", "gitea-read:as", "gitea_bound ace.claude-code.gitea-read not written yet", "/etc/x", uint8(1))
	f.Add("g14", "zsh", "shell", "zsh:normal", "alias ll='ls -l'\n", "", uint8(0))
	f.Add("a.b", "m=x", "config", "k\u2028", "<&>\"\\", "sha256:00", uint8(2))
	f.Fuzz(func(t *testing.T, node, module, kind, name, text, path string, state uint8) {
		for _, s := range []string{node, module, kind, name, text, path} {
			if !utf8.ValidString(s) {
				return // no key token decodes to such bytes (spec.DecodeToken)
			}
		}
		if node == "" || module == "" || kind == "" || name == "" {
			return // an empty token is no key
		}
		needStates := []string{"met", "waiting", "failed"}
		need, _ := json.Marshal(report.Need{Node: node, Module: module, Kind: kind, Name: name,
			State: needStates[int(state)%len(needStates)], Why: text})
		if _, why := checkNeed([]string{node, module, kind, name}, need); why != "" {
			t.Fatalf("need %s said out of shape: %s", need, why)
		}
		reportStates := []string{"applied", "waiting", "failed", "removed"}
		rep, _ := json.Marshal(report.Report{Node: node, Module: module, State: reportStates[int(state)%len(reportStates)],
			At: "2026-12-03T12:00:00Z", Files: []report.File{{Path: path, Action: "written", Digest: text}},
			Waiting: []report.Waiting{{Kind: kind, Name: name, Why: text}}, Reason: text})
		if _, why := checkReport([]string{node, module}, rep); why != "" {
			t.Fatalf("report %s said out of shape: %s", rep, why)
		}
		item, _ := json.Marshal(report.Item{Collection: name, Contributor: module, Item: text})
		if _, why := checkItem([]string{node, name, module}, item); why != "" {
			t.Fatalf("item %s said out of shape: %s", item, why)
		}
	})
}
