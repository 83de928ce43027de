package fill

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestABodyThatIsNotOneObjectIsRefused: a body is one JSON object and
// nothing after it but white space. Two objects, or an object followed by
// anything else, is a 400 saying so, and nothing of it is written. Before,
// the first object was filled and the rest dropped unread (200): a body
// joined from two requests, or cut and retried into another, had its
// second half lost with no word.
func TestABodyThatIsNotOneObjectIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	send := func(body string) (int, string) {
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
		return rawAnswer(t, c, head, []byte(body))
	}
	one := `{"module":"a","files":[{"path":"/x","form":"owned","content":"aGkK"}]}`
	for _, tc := range []struct{ name, body string }{
		{"two objects", one + `{"module":"b","files":[{"path":"/y","form":"owned","content":"aGkK"}]}`},
		{"garbage after", one + "xx"},
		{"a closing brace too many", one + "}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := send(tc.body)
			if status != http.StatusBadRequest || !strings.Contains(msg, "after the request's object") {
				t.Errorf("answer %d %s; want a 400 saying something follows the request's object", status, msg)
			}
		})
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("written: %v", entries)
	}
	// white space after it is fine
	if status, msg := send(one + " \r\n\t\n"); status != http.StatusOK {
		t.Errorf("an object and white space: %d %s", status, msg)
	}
	mustRead(t, root+"/x", "hi\n")
}

// TestContentNotBase64NamesTheFile: a file's content that is not base64
// is a 400 naming which file of the request and its content. Before, it
// said "illegal base64 data at input byte 0" alone: of which of a
// request's thousands of files, the sender could not tell.
func TestContentNotBase64NamesTheFile(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	body := `{"module":"a","files":[{"path":"/ok","form":"owned","content":"aGkK"},{"path":"/bad","form":"owned","content":"aGkK!"}]}`
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
	status, msg := rawAnswer(t, c, head, []byte(body))
	if status != http.StatusBadRequest || !strings.Contains(msg, "file 2 of the request") || !strings.Contains(msg, "content is not base64") {
		t.Errorf("answer %d %s; want a 400 naming file 2 and its content", status, msg)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("written: %v", entries)
	}
}

// TestARequestWithoutABodySaysSo: a POST with no body (no Content-Length,
// or 0) is a 400 saying the request has no body. Before, it said
// "decoding the request: EOF".
func TestARequestWithoutABodySaysSo(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	for _, head := range []string{
		"POST " + FillPath + " HTTP/1.1\r\nHost: fill\r\n\r\n",
		"POST " + FillPath + " HTTP/1.1\r\nHost: fill\r\nContent-Length: 0\r\n\r\n",
		"POST " + FillPath + " HTTP/1.1\r\nHost: fill\r\nContent-Length: 3\r\n\r\n \r\n",
	} {
		status, msg := rawAnswer(t, c, head, nil)
		if status != http.StatusBadRequest || !strings.Contains(msg, "the request has no body") {
			t.Errorf("%q answered %d %s; want a 400 saying the request has no body", head, status, msg)
		}
	}
}
