package fill

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// rawAnswer sends head and body over a new connection to c's socket and
// reads the answer (a generous deadline: a server that waits for more
// answers nothing).
func rawAnswer(t *testing.T, c *Client, head string, body []byte) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { // the server may answer before it has read it all
		conn.Write([]byte(head))
		conn.Write(body)
	}()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	var e errorBody
	if json.Unmarshal(msg, &e) == nil && e.Error != "" {
		return resp.StatusCode, e.Error
	}
	return resp.StatusCode, string(msg)
}

// TestARequestOfManyFilesIsRefusedBeforeItIsHeldWhole: a body of 400,000
// files of no content (13 MB) is refused at its 50,001st file, naming the
// limit: the server allocates less than 100 MB for it (40 here), where it read the
// body whole and decoded every file first (361 MB: the 50,000-file
// limit was checked after), and eight such requests at once held that much
// each.
func TestARequestOfManyFilesIsRefusedBeforeItIsHeldWhole(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	var body bytes.Buffer
	body.WriteString(`{"module":"m","whole":true,"files":[`)
	for i := range 400_000 {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(`{"path":"/d/x","form":"owned"}`)
	}
	body.WriteString(`]}`)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, body.Len())

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, msg := rawAnswer(t, c, head, body.Bytes())
	runtime.ReadMemStats(&after)
	if status != http.StatusBadRequest || !strings.Contains(msg, fmt.Sprintf("more than %d files", MaxFiles)) {
		t.Errorf("answer %d %s; want a 400 saying it names more than %d files", status, msg, MaxFiles)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated for the request: %d MB", alloc>>20)
	if alloc > 100<<20 {
		t.Errorf("the request took %d MB of allocations; want under 100 MB", alloc>>20)
	}
	if _, err := os.Lstat(root + "/d"); !os.IsNotExist(err) {
		t.Errorf("written: %v", err)
	}
}

// TestABodyDeclaredOverMaxBodyIsRefusedUnread: a Content-Length over
// MaxBody is answered 413 at once, naming the limit, before a byte of the
// body is read. Before, mesh-fill read MaxBody bytes of it first (a sender
// sending slowly held a slot for the whole read timeout).
func TestABodyDeclaredOverMaxBodyIsRefusedUnread(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, MaxBody+1)
	status, msg := rawAnswer(t, c, head, []byte(`{"module":"m","files":[`))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, fmt.Sprint(MaxBody)) {
		t.Errorf("answer %d %s; want a 413 naming the limit of %d bytes", status, msg, MaxBody)
	}
}

// TestHostileRequestJSON: what the decoder takes and refuses. A key named
// twice at the top is refused (which one a reader takes is a guess); a
// key's case does not matter, as for encoding/json; content that is not
// base64, a mode that is not a string, trailing garbage inside the object
// are 400s, and nothing is written.
func TestHostileRequestJSON(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	send := func(body string) (int, string) {
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
		return rawAnswer(t, c, head, []byte(body))
	}
	for _, tc := range []struct{ name, body, says string }{
		{"module twice", `{"module":"a","module":"b","files":[{"path":"/x","form":"owned","content":"aGkK"}]}`, `"module" twice`},
		{"files twice", `{"module":"a","files":[{"path":"/x","form":"owned"}],"Files":[{"path":"/y","form":"owned"}]}`, `"Files" twice`},
		{"content not base64", `{"module":"a","files":[{"path":"/x","form":"owned","content":"not base64!"}]}`, "decoding the request"},
		{"mode a number", `{"module":"a","files":[{"path":"/x","form":"owned","mode":644}]}`, "decoding the request"},
		{"mode huge", `{"module":"a","files":[{"path":"/x","form":"owned","mode":"0777777777777777"}]}`, "not an octal mode between 0000 and 0777"},
		{"mode 0o", `{"module":"a","files":[{"path":"/x","form":"owned","mode":"0o644"}]}`, "not an octal mode"},
		{"mode setuid", `{"module":"a","files":[{"path":"/x","form":"owned","mode":"4755"}]}`, "not an octal mode"},
		{"files not an array", `{"module":"a","files":{"path":"/x"}}`, "decoding the request"},
		{"not an object", `["module","a"]`, "decoding the request"},
		{"cut", `{"module":"a","files":[{"path":"/x","form":"owned"}`, "decoding the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := send(tc.body)
			if status != http.StatusBadRequest || !strings.Contains(msg, tc.says) {
				t.Errorf("answer %d %s; want a 400 saying %s", status, msg, tc.says)
			}
		})
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("written: %v", entries)
	}
	// a key in another case is the key; fields unknown are skipped
	status, msg := send(`{"MODULE":"a","extra":{"deep":[1,2,3]},"Files":[{"Path":"/x","FORM":"owned","content":"aGkK"}]}`)
	if status != http.StatusOK {
		t.Fatalf("answer %d %s; want 200", status, msg)
	}
	mustRead(t, root+"/x", "hi\n")
}

// TestAHeaderOver64KiBIsRefused: a request's head is a few hundred bytes
// (a DELETE's module at most 765 escaped); one over 64 KiB is answered
// 431 and not served. Before, each of the MaxConns connections could send
// a megabyte of header (net/http's default) held while it was read.
func TestAHeaderOver64KiBIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	body := `{"module":"m","files":[{"path":"/x","form":"owned","content":"aGkK"}]}`
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nX-Pad: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, strings.Repeat("p", 200<<10), len(body))
	status, msg := rawAnswer(t, c, head, []byte(body))
	if status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("answer %d %s; want 431", status, msg)
	}
	mustAbsent(t, root+"/x")
}

// TestAFieldTooLongIsRefusedWithoutEchoingIt: a file's path, owner, group,
// mode, form, on_change action or unit of 100 KB is refused (400) naming
// the field and its length, its answer and log line a few hundred bytes.
// Before, most refusals quoted the value whole ("path %q is relative",
// "mode %q is not an octal mode", "owner %q is not a user here"): a
// request could make mesh-fill write log lines as long as its body.
func TestAFieldTooLongIsRefusedWithoutEchoingIt(t *testing.T) {
	var log lockedLog
	root := t.TempDir()
	c := serveOn(t, &Server{Root: root, Log: zerolog.New(&log)})
	long := strings.Repeat("v", 100<<10)
	for _, tc := range []struct {
		field string
		f     File
	}{
		{"path", File{Path: long}},
		{"path", File{Path: "/" + long + "\x00"}},
		{"owner", File{Owner: long}},
		{"group", File{Group: long}},
		{"mode", File{Mode: long}},
		{"form", File{Form: long}},
		{"on_change action", File{OnChange: OnChange{Action: long, Unit: "a.service"}}},
		{"on_change unit", File{OnChange: OnChange{Action: OnChangeRestart, Unit: long}}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			if tc.f.Path == "" {
				tc.f.Path = "/etc/x"
			}
			if tc.f.Form == "" {
				tc.f.Form = FormOwned
			}
			before := len(log.String())
			body, _ := json.Marshal(Request{Module: "m", Files: []File{{Path: "/etc/ok", Form: FormOwned}, tc.f}})
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, len(body))
			status, msg := rawAnswer(t, c, head, body)
			if status != http.StatusBadRequest || !strings.Contains(msg, tc.field) || len(msg) > 400 {
				t.Errorf("answer %d (%d bytes) %.200s; want a 400 of a few hundred bytes naming the %s", status, len(msg), msg, tc.field)
			}
			if n := len(log.String()) - before; n > 2000 {
				t.Errorf("%d bytes logged", n)
			}
		})
	}
	mustAbsent(t, filepath.Join(root, "etc"))
}
