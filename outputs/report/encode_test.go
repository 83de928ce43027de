package report

import (
	"strings"
	"testing"
)

// The report's bytes written field by field are encoding/json's: every
// field, empty and omitted ones, and strings needing escapes.
func TestEncodeReportSaysWhatEncodingJSONSays(t *testing.T) {
	odd := `we"ird\ <&> ` + "\x01\t\n é 日本 \u2028 \xff"
	for _, r := range []Report{
		{},
		{Node: "n1", Module: "web", State: "applied", At: "2026-01-02T03:04:05Z", Files: []File{}},
		{Node: "n1", Module: "web", State: "applied", At: "x", Files: []File{{Path: "/etc/a", Action: "created", Digest: "sha256:aa"}, {Path: odd, Action: odd, Digest: odd}}, FilesMore: 3},
		{Node: odd, Module: odd, State: "waiting", At: odd, Waiting: []Waiting{{Kind: "vault", Name: "tls", Why: odd}, {}}, WaitingMore: 12, Reason: odd},
		{Module: "m", Waiting: []Waiting{}, FilesMore: -1, Reason: strings.Repeat("r", 600)},
	} {
		got := string(encodeReport(&r))
		// encoding/json writes a nil list as null; a report's lists are
		// [] (TestAReportsListsAreListsWhenEmpty).
		if r.Files == nil {
			r.Files = []File{}
		}
		if r.Waiting == nil {
			r.Waiting = []Waiting{}
		}
		if want := string(encode(r)); got != want {
			t.Errorf("encodeReport\n%s\nencoding/json\n%s", got, want)
		}
	}
}

// A report's "files" and "waiting" are lists whatever the state, [] when
// there are none, never null (SPEC §5.3 shows lists; a consumer decoding
// them as lists is not handed null).
func TestAReportsListsAreListsWhenEmpty(t *testing.T) {
	for _, r := range []Report{
		{Node: "n1", Module: "web", State: "waiting", At: "x", Waiting: []Waiting{{Kind: "config", Name: "model", Why: "not written yet"}}},
		{Node: "n1", Module: "web", State: "applied", At: "x", Files: []File{{Path: "/etc/a", Action: "written", Digest: "sha256:aa"}}},
		{Node: "n1", Module: "web", State: "failed", At: "x", Reason: "no"},
	} {
		got := string(encodeReport(&r))
		for _, f := range []string{`"files":[`, `"waiting":[`} {
			if !strings.Contains(got, f) {
				t.Errorf("%s report %s: no %s…]", r.State, got, f)
			}
		}
	}
}

// Any strings at all: `go test -fuzz FuzzEncodeReport ./outputs/report`.
func FuzzEncodeReport(f *testing.F) {
	f.Add("n1", "web", "/etc/a", "sha256:aa", "vault", `we"ird\ <&> `+"\x01\u2028\xff", 3)
	f.Fuzz(func(t *testing.T, node, module, path, digest, kind, why string, more int) {
		r := Report{Node: node, Module: module, State: "waiting", At: why, Reason: why, FilesMore: more, WaitingMore: -more,
			Files:   []File{{Path: path, Action: module, Digest: digest}},
			Waiting: []Waiting{{Kind: kind, Name: path, Why: why}}}
		if got, want := string(encodeReport(&r)), string(encode(r)); got != want {
			t.Errorf("encodeReport\n%q\nencoding/json\n%q", got, want)
		}
	})
}
