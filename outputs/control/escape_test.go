package control

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds terminal control bytes: ESC (an OSC setting the window
// title, ended by BEL), CR (overwriting the line), a C1 CSI, DEL, a bidi
// override and a byte that is not UTF-8.
const hostile = "we\x1b]0;pwned\x07b\rX\u009b2J\x7f\u202e\xff"

// rawControl says where text holds a byte or rune a terminal acts on,
// other than the newlines ending its lines.
func rawControl(text string) (int, bool) {
	for i, r := range text {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || (r == utf8.RuneError && !strings.HasPrefix(text[i:], "\uFFFD")) {
			return i, true
		}
	}
	return 0, false
}

func TestStatusAndExplainEscapeTerminalControlBytes(t *testing.T) {
	m := &Modules{Node: "ace" + hostile, At: at, Modules: []ModuleStatus{
		{Module: "m" + hostile, State: "waiting", Files: 1, Since: at, Reason: "reason " + hostile},
		{Module: "web", State: "applied", Files: 1, FilesMet: 1, Since: at},
	}}
	st := text(t, func(w io.Writer) error { return WriteStatus(w, m) })
	e := &Explanation{Node: "ace", Module: "m" + hostile, State: "waiting", Since: at, At: at, Reason: "r" + hostile,
		Outputs: []Output{
			{Kind: "file", Path: "/etc/" + hostile, State: "waiting", Why: "why" + hostile, Root: true, Chain: []Step{
				{Kind: "config", Bucket: "b", Key: "k" + hostile, Where: "b k" + hostile, State: "waiting", Why: "not written" + hostile,
					Root: true, Input: true, Since: at}}},
			{Kind: "secret-file", Path: "/etc/s", Secret: "s" + hostile, State: "met"},
			{Kind: "item", Collection: "c" + hostile, State: "met"},
		}}
	ex := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
	e.Fill = &FillFailure{Socket: "/run/f.sock", Why: "fill socket /run/f.sock: " + hostile, Since: at}
	ex += text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
	for what, out := range map[string]string{"status": st, "explain": ex} {
		t.Logf("%s:\n%s", what, out)
		if i, bad := rawControl(out); bad {
			t.Errorf("%s prints a control byte raw at %d: %q", what, i, out[i:min(i+8, len(out))])
		}
		if !strings.Contains(out, `we\x1b]0;pwned\ab\rX\u009b2J\x7f\u202e\xff`) {
			t.Errorf("%s does not show the bytes escaped:\n%s", what, out)
		}
	}
	lines := strings.Split(st, "\n")
	if strings.Index(lines[1], "waiting") != strings.Index(lines[0], "STATE") || strings.Index(lines[2], "applied") != strings.Index(lines[0], "STATE") {
		t.Errorf("escaped, the columns are not aligned:\n%s", st)
	}
}

func TestJSONKeepsControlBytesAsJSONEscapes(t *testing.T) {
	rec := httptest.NewRecorder()
	in := ModuleStatus{Module: "m" + strings.ToValidUTF8(hostile, "\uFFFD"), Reason: "\x1b[2J"}
	WriteJSON(rec, 200, in)
	b := rec.Body.Bytes()
	if i, bad := rawControl(string(b)); bad {
		t.Fatalf("the JSON holds a control byte raw at %d: %q", i, b)
	}
	var back ModuleStatus
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, in) {
		t.Fatalf("%v: %+v, want %+v\n%s", err, back, in, b)
	}
}
