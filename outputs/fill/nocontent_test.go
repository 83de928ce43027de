package fill

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAFileWithoutContentIsRefusedNotEmptied: SPEC §4.3's file carries its
// content as base64 text ("" for an empty file). A file whose content key
// is missing (a client naming it "contents" or "data") or null is refused
// (400 naming its path) and nothing of the request is written; before, it
// was taken as empty: the owned file was truncated to nothing and its
// program restarted. An empty content ("") still writes an empty file.
func TestAFileWithoutContentIsRefusedNotEmptied(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/app.conf", Form: FormOwned, Content: []byte("port=1\n")}}})
	for _, file := range []string{
		`{"path":"/etc/app.conf","form":"owned"}`,
		`{"path":"/etc/app.conf","form":"owned","contents":"eA=="}`,
		`{"path":"/etc/app.conf","form":"owned","content":null}`,
	} {
		body := `{"module":"m","files":[{"path":"/etc/other","form":"owned","content":"eA=="},` + file + `]}`
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
		status, msg := rawAnswer(t, c, head, []byte(body))
		if status != http.StatusBadRequest || !strings.Contains(msg, `path "/etc/app.conf": no content (base64 text, "" for an empty file)`) {
			t.Errorf("%s: answer %d %s; want a 400 saying its path has no content", file, status, msg)
		}
		mustRead(t, root+"/etc/app.conf", "port=1\n")
		mustAbsent(t, root+"/etc/other")
	}
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/app.conf", Form: FormOwned, Content: []byte{}}}})
	mustRead(t, root+"/etc/app.conf", "")
}
