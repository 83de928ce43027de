package fill

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestAFileNamingAKeyTwiceIsRefused: a file of the request naming one of
// its keys twice, in any case ("path" and "Path", "mode" twice, an
// on_change's "unit" twice), is refused (400 naming the key and the
// file's place in the request) and nothing of the request is written, as
// a key of the request named twice is: which of the two a reader takes is
// a guess, and a proxy or log that read the first ("/etc/app.conf",
// "0600") while mesh-fill wrote the last ("/etc/other", "0644") was
// mistaken about what was written. Before, the last was written.
func TestAFileNamingAKeyTwiceIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"true"}})
	send := func(body string) (int, string) {
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
		return rawAnswer(t, c, head, []byte(body))
	}
	ok := `{"path":"/ok","form":"owned","content":"aGkK"}`
	for _, tc := range []struct{ file, key string }{
		{`{"path":"/a","form":"owned","Path":"/b","content":"aGkK"}`, `"Path"`},
		{`{"path":"/a","form":"owned","mode":"0600","mode":"0644"}`, `"mode"`},
		{`{"path":"/a","form":"owned","content":"aGkK","CONTENT":"eAo="}`, `"CONTENT"`},
		{`{"path":"/a","form":"owned","on_change":{"action":"restart","unit":"a.service","Unit":"b.service"}}`, `"Unit"`},
		{`{"path":"/a","form":"owned","on_change":{"action":"none"},"On_Change":{"action":"restart","unit":"b.service"}}`, `"On_Change"`},
	} {
		status, msg := send(`{"module":"m","files":[` + ok + `,` + tc.file + `]}`)
		if status != http.StatusBadRequest || !strings.Contains(msg, "file 2 of the request") || !strings.Contains(msg, tc.key+" named twice") {
			t.Errorf("%s: answer %d %s; want a 400 saying file 2 names %s twice", tc.file, status, msg, tc.key)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("written: %v", entries)
	}
	// each key once, in any case: written as before
	status, msg := send(`{"module":"m","files":[{"PATH":"/x","Form":"owned","content":"aGkK","Mode":"0640","On_change":{"Action":"none"}},null]}`)
	if status != http.StatusBadRequest || !strings.Contains(msg, "a file has no path") {
		t.Errorf("a null file: answer %d %s; want the 400 of a file with no path", status, msg)
	}
	status, msg = send(`{"module":"m","files":[{"PATH":"/x","Form":"owned","content":"aGkK","Mode":"0640","On_change":{"Action":"none"},"extra":[1,{"a":2}]}]}`)
	if status != http.StatusOK {
		t.Fatalf("answer %d %s; want 200", status, msg)
	}
	mustRead(t, root+"/x", "hi\n")
	if fi, err := os.Stat(root + "/x"); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("/x: %v %v, want mode 0640", fi, err)
	}
}

// TestDecodeFileKnowsEveryKeyOfAFile: decodeFile reads File's keys by
// name; a field added to File (or OnChange) without it would be skipped
// as unknown.
func TestDecodeFileKnowsEveryKeyOfAFile(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		keys []string
	}{{reflect.TypeFor[File](), fileKeys[:]}, {reflect.TypeFor[OnChange](), onChangeKeys[:]}} {
		var tags []string
		for f := range tc.typ.Fields() {
			if !f.IsExported() { // not on the wire
				continue
			}
			tags = append(tags, strings.Split(f.Tag.Get("json"), ",")[0])
		}
		if !slices.Equal(tags, tc.keys) {
			t.Errorf("%s's keys are %q; decodeFile reads %q", tc.typ, tags, tc.keys)
		}
	}
}
