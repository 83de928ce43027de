package fill

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// answering serves a unix socket answering every POST 200 with body.
func answering(t *testing.T, body string) *Client {
	t.Helper()
	sock := filepath.Join(socketDir(t), "odd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &Client{Socket: sock, Timeout: 10 * time.Second}
}

// A node-engine's 200 must say, of each file sent, one of SPEC §4.3's
// actions with a sha256 digest. One that answered the file's content as
// its action (a secret in it) had it put in the module's report and
// event as it was; one that left a file out, or said a file it was sent
// was removed, had the module taken as applied. Each is a failed fill
// whose error names only the path sent, never a text of the answer.
func TestAFillAnswerThatDoesNotSayWhatBecameOfEachFileIsRefused(t *testing.T) {
	const planted = "PLANTED-answer-secret-51e2"
	digest := "sha256:" + strings.Repeat("ab", 32)
	req := Request{Module: "web", Files: []File{{Path: "/etc/web/a.conf", Form: FormOwned, Content: []byte("key=" + planted + "\n")}}}
	for _, c := range []struct{ name, body, says string }{
		{"an action quoting the content", `{"files":[{"path":"/etc/web/a.conf","action":"key=` + planted + `","digest":"` + digest + `"}]}`,
			"the answer gives /etc/web/a.conf an action that is none of written, unchanged, kept, merged, removed"},
		{"a digest quoting the content", `{"files":[{"path":"/etc/web/a.conf","action":"written","digest":"` + planted + `"}]}`,
			"the answer's digest of /etc/web/a.conf is not sha256:<64 hex digits>"},
		{"a file left out", `{"files":[]}`, "the answer does not say what became of /etc/web/a.conf"},
		{"a file sent said removed", `{"files":[{"path":"/etc/web/a.conf","action":"removed"}]}`,
			"the answer says /etc/web/a.conf, which the request names, was removed"},
		{"another path's odd action", `{"files":[{"path":"/etc/web/a.conf","action":"written","digest":"` + digest + `"},{"path":"/x/` + planted + `","action":"` + planted + `"}]}`,
			"the answer gives a file an action that is none of"},
	} {
		_, err := answering(t, c.body).Fill(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: the fill's error is %v, want it to say %q", c.name, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), planted) {
			t.Errorf("%s: the error quotes the answer: %v", c.name, err)
		}
	}
	if _, err := answering(t, `{"files":[{"path":"/etc/web/a.conf","action":"written","digest":"`+digest+`"}]}`).Fill(context.Background(), req); err != nil {
		t.Fatalf("a 200 that says what became of the file: %v", err)
	}
}
