package stage

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

func value(path, content string, secret bool) *nodes.FileValue {
	return nodes.NewFileValue(&nodes.FileSpec{Path: path, Owner: "root", Group: "www", Mode: "0640", Form: "text",
		OnChange: nodes.OnChange{Action: "reload", Unit: "web.service"}}, []byte(content), secret)
}

func ready(v *nodes.FileValue) nodes.FileView {
	return nodes.FileView{Path: v.Spec.Path, State: graph.Ready, Value: v}
}

func wire(v *nodes.FileValue) fill.File {
	content, _ := v.Bytes()
	return fill.File{Path: v.Spec.Path, Form: "text", Content: content, Owner: "root", Group: "www", Mode: "0640",
		OnChange: fill.OnChange{Action: "reload", Unit: "web.service"}}
}

func TestFillRequest(t *testing.T) {
	a, b := value("/etc/a", "A", false), value("/etc/b", "B", true)
	b2 := value("/etc/b", "B", true) // equal bytes, another value: the engine would have kept b
	filledAB := map[string]*nodes.FileValue{"/etc/a": a, "/etc/b": b}
	for _, c := range []struct {
		name   string
		files  []nodes.FileView
		filled map[string]*nodes.FileValue
		all    bool
		want   []fill.File // nil: no request
	}{
		{"first fill sends every file", []nodes.FileView{ready(a), ready(b)}, nil, false, []fill.File{wire(a), wire(b)}},
		{"nothing changed sends nothing", []nodes.FileView{ready(a), ready(b)}, filledAB, false, nil},
		{"all sends every file again", []nodes.FileView{ready(a), ready(b)}, filledAB, true, []fill.File{wire(a), wire(b)}},
		{"a changed value alone is sent", []nodes.FileView{ready(a), ready(b2)}, filledAB, false, []fill.File{wire(b2)}},
		{"a file not ready holds the module", []nodes.FileView{ready(a), {Path: "/etc/b", State: graph.Waiting, Why: "vault x"}}, nil, true, nil},
		{"a failed file holds the module", []nodes.FileView{{Path: "/etc/a", State: graph.Failed, Why: "bad"}, ready(b)}, nil, false, nil},
		{"no files sends nothing", nil, nil, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			mo := newModuleOut()
			for p, v := range c.filled {
				mo.filled[p] = v
			}
			req, sent, _ := fillRequest(&nodes.ModuleView{Name: "web", Files: c.files}, mo, c.all)
			if c.want == nil {
				if req != nil || sent != nil {
					t.Fatalf("request %+v, sent %v; want none", req, sent)
				}
				return
			}
			if req == nil {
				t.Fatal("no request")
			}
			if req.Module != "web" || !reflect.DeepEqual(req.Files, c.want) {
				t.Errorf("request %+v, want module web files %+v", req, c.want)
			}
			if len(sent) != len(c.want) {
				t.Errorf("sent %v, want %d files", sent, len(c.want))
			}
			for _, f := range c.files {
				if v, ok := sent[f.Path]; ok && v != f.Value {
					t.Errorf("sent[%s] is not the view's value", f.Path)
				}
			}
		})
	}
}

func TestReportOf(t *testing.T) {
	a := value("/etc/a", "A", false)
	files := []nodes.FileView{ready(a), {Path: "/etc/b", State: graph.Waiting}}
	recorded := map[string]report.File{
		"/etc/b": {Path: "/etc/b", Action: "created", Digest: "sha256:bb"},
		"/etc/a": {Path: "/etc/a", Action: "unchanged", Digest: "sha256:aa"},
		"/gone":  {Path: "/gone", Action: "created", Digest: "sha256:00"},
	}
	inViewOrder := []report.File{recorded["/etc/a"], recorded["/etc/b"]}
	for _, c := range []struct {
		name    string
		v       nodes.ModuleView
		failure string
		want    report.Report
	}{
		{"ready and filled is applied",
			nodes.ModuleView{Name: "web", State: graph.Ready, Files: files}, "",
			report.Report{Module: "web", State: "applied", Files: inViewOrder}},
		{"a failed fill fails a ready module",
			nodes.ModuleView{Name: "web", State: graph.Ready, Files: files}, "fill socket: refused",
			report.Report{Module: "web", State: "failed", Reason: "fill socket: refused", Files: inViewOrder}},
		{"a failed view says its reason, not the fill's",
			nodes.ModuleView{Name: "web", State: graph.Failed, Reason: "template: bad", Files: files}, "fill socket: refused",
			report.Report{Module: "web", State: "failed", Reason: "template: bad", Files: inViewOrder}},
		{"waiting lists the needs not met",
			nodes.ModuleView{Name: "web", State: graph.Waiting, Reason: "r", Needs: []nodes.NeedView{
				{Kind: "db", Name: "main", State: graph.Ready},
				{Kind: "vault", Name: "tls", State: graph.Waiting, Why: "no answer"},
				{Kind: "x", Name: "y", State: graph.Failed, Why: "bad"},
			}}, "",
			report.Report{Module: "web", State: "waiting", Waiting: []report.Waiting{{Kind: "vault", Name: "tls", Why: "no answer"}}}},
		{"waiting with every need met waits on the module",
			nodes.ModuleView{Name: "web", State: graph.Waiting, Reason: "archive not fetched yet",
				Needs: []nodes.NeedView{{Kind: "db", Name: "main", State: graph.Ready}}}, "",
			report.Report{Module: "web", State: "waiting", Waiting: []report.Waiting{{Kind: "module", Name: "web", Why: "archive not fetched yet"}}}},
		{"failed lists what else waits, not what fails",
			nodes.ModuleView{Name: "web", State: graph.Failed, Reason: "bad", Needs: []nodes.NeedView{
				{Kind: "db", Name: "main", State: graph.Ready},
				{Kind: "vault", Name: "tls", State: graph.Waiting, Why: "no answer"},
				{Kind: "x", Name: "y", State: graph.Failed, Why: "bad"},
			}}, "",
			report.Report{Module: "web", State: "failed", Reason: "bad", Waiting: []report.Waiting{{Kind: "vault", Name: "tls", Why: "no answer"}}}},
		{"failed with nothing else waiting lists nothing, not the module",
			nodes.ModuleView{Name: "web", State: graph.Failed, Reason: "bad", Needs: []nodes.NeedView{
				{Kind: "x", Name: "y", State: graph.Failed, Why: "bad"},
			}}, "",
			report.Report{Module: "web", State: "failed", Reason: "bad"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mo := newModuleOut()
			mo.files, mo.failure = recorded, c.failure
			if got := reportOf(&c.v, mo); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestNeedsOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		needs []nodes.NeedView
		want  []report.Need
	}{
		{"none", nil, []report.Need{}},
		{"each state", []nodes.NeedView{
			{Kind: "db", Name: "main", State: graph.Ready},
			{Kind: "vault", Name: "tls", State: graph.Waiting, Why: "no answer"},
			{Kind: "x", Name: "y", State: graph.Failed, Why: "bad"},
		}, []report.Need{
			{Node: "n1", Module: "web", Kind: "db", Name: "main", State: "met"},
			{Node: "n1", Module: "web", Kind: "vault", Name: "tls", State: "waiting", Why: "no answer"},
			{Node: "n1", Module: "web", Kind: "x", Name: "y", State: "failed", Why: "bad"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := needsOf("n1", "web", c.needs)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestTakeFill(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	pub, sec := value("/etc/a", "plain", false), value("/etc/s", "hunter2", true)
	v := &nodes.ModuleView{Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(pub), ready(sec)}}
	sent := map[string]*nodes.FileValue{"/etc/a": pub, "/etc/s": sec}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte{0, 0, 0, 0, 0, 0, 0, 6}) // the path's length, then the path, then the bytes
	mac.Write([]byte("/etc/s"))
	mac.Write([]byte("hunter2"))
	keyed := "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
	plain := sha256.Sum256([]byte("hunter2"))
	resp := func(action string) fill.Response {
		return fill.Response{Files: []fill.FileResult{
			{Path: "/etc/a", Action: action, Digest: "sha256:aa"},
			{Path: "/etc/s", Action: action, Digest: "sha256:" + hex.EncodeToString(plain[:])},
		}}
	}
	for _, c := range []struct {
		name     string
		before   map[string]report.File
		failure  string
		resp     fill.Response
		err      error
		want     map[string]report.File
		failWant string
	}{
		{"a secret-bearing file's digest is keyed, another's kept", nil, "", resp("created"), nil,
			map[string]report.File{
				"/etc/a": {Path: "/etc/a", Action: "created", Digest: "sha256:aa"},
				"/etc/s": {Path: "/etc/s", Action: "created", Digest: keyed},
			}, ""},
		{"a refill that changed nothing keeps what was said, and clears a failure",
			map[string]report.File{
				"/etc/a": {Path: "/etc/a", Action: "created", Digest: "sha256:aa"},
				"/etc/s": {Path: "/etc/s", Action: "created", Digest: keyed},
			}, "was down", resp("unchanged"), nil,
			map[string]report.File{
				"/etc/a": {Path: "/etc/a", Action: "created", Digest: "sha256:aa"},
				"/etc/s": {Path: "/etc/s", Action: "created", Digest: keyed},
			}, ""},
		{"a failed fill records the failure, nothing filled", nil, "", fill.Response{}, errors.New("fill socket: refused"),
			map[string]report.File{}, "fill socket: refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mo := newModuleOut()
			if c.before != nil {
				mo.files = c.before
			}
			mo.failure = c.failure
			req := &fill.Request{Module: "web", Files: []fill.File{wire(pub), wire(sec)}}
			mo.takeFill(v, req, sent, c.resp, c.err, key, nil)
			if !reflect.DeepEqual(mo.files, c.want) {
				t.Errorf("files %+v\nwant  %+v", mo.files, c.want)
			}
			if mo.failure != c.failWant {
				t.Errorf("failure %q, want %q", mo.failure, c.failWant)
			}
			if mo.retry != (c.err != nil) {
				t.Errorf("retry %v after err %v", mo.retry, c.err)
			}
			if c.err == nil && (mo.filled["/etc/a"] != pub || mo.filled["/etc/s"] != sec) {
				t.Errorf("filled %v: not what was sent", mo.filled)
			}
			if c.err != nil && len(mo.filled) != 0 {
				t.Errorf("a failed fill recorded %v as filled", mo.filled)
			}
		})
	}
	if other := secretDigest([]byte("another key"), "/etc/s", []byte("hunter2")); other == keyed {
		t.Error("the digest does not depend on the key")
	}
	// One value in two files: two digests (an outside audit: a report
	// said which of a node's files held the same secret).
	if other := secretDigest(key, "/etc/s2", []byte("hunter2")); other == keyed {
		t.Error("the digest does not depend on the file's path")
	}
	if a, b := secretDigest(key, "/etc/ab", []byte("c")), secretDigest(key, "/etc/a", []byte("bc")); a == b {
		t.Error("a path and bytes are not told apart from another path and other bytes")
	}
}

func TestTakeItems(t *testing.T) {
	for _, c := range []struct {
		name   string
		before map[string][]byte
		items  []nodes.ItemView
		want   map[string][]byte
		dirty  bool // they moved: the publisher is handed them
	}{
		{"ready is recorded", nil, []nodes.ItemView{{Collection: "c", State: graph.Ready, Text: []byte("t")}},
			map[string][]byte{"c": []byte("t")}, true},
		{"waiting and unknown keeps the bucket's", nil, []nodes.ItemView{{Collection: "c", State: graph.Waiting}},
			map[string][]byte{"c": nil}, true},
		{"waiting keeps the text recorded", map[string][]byte{"c": []byte("old")}, []nodes.ItemView{{Collection: "c", State: graph.Waiting}},
			map[string][]byte{"c": []byte("old")}, false},
		{"failed is not recorded", map[string][]byte{"c": []byte("old")}, []nodes.ItemView{{Collection: "c", State: graph.Failed}},
			map[string][]byte{}, true},
		{"an item gone is dropped", map[string][]byte{"c": []byte("old"), "d": []byte("d")}, []nodes.ItemView{{Collection: "d", State: graph.Ready, Text: []byte("d")}},
			map[string][]byte{"d": []byte("d")}, true},
		{"the same text again moves nothing", map[string][]byte{"c": []byte("t")}, []nodes.ItemView{{Collection: "c", State: graph.Ready, Text: []byte("t")}},
			map[string][]byte{"c": []byte("t")}, false},
		{"a new text", map[string][]byte{"c": []byte("t")}, []nodes.ItemView{{Collection: "c", State: graph.Ready, Text: []byte("t2")}},
			map[string][]byte{"c": []byte("t2")}, true},
		{"a text once waiting", map[string][]byte{"c": nil}, []nodes.ItemView{{Collection: "c", State: graph.Ready, Text: []byte("t")}},
			map[string][]byte{"c": []byte("t")}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mo := newModuleOut()
			for k, v := range c.before {
				mo.items[k] = v
			}
			mo.itemsDirty = false // as recorded
			mo.takeItems(&nodes.ModuleView{Name: "web", Items: c.items})
			if !reflect.DeepEqual(mo.items, c.want) {
				t.Errorf("items %q, want %q", mo.items, c.want)
			}
			if mo.itemsDirty != c.dirty {
				t.Errorf("dirty %v, want %v", mo.itemsDirty, c.dirty)
			}
		})
	}
}
