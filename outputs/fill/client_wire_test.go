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

// recordBodies serves a unix socket answering every POST 200 with no
// files, and hands each request's body on the channel as it came: the
// bytes a node-engine of any make reads.
func recordBodies(t *testing.T) (*Client, <-chan string) {
	t.Helper()
	sock := filepath.Join(socketDir(t), "wire.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	bodies := make(chan string, 8)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"files":[]}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &Client{Socket: sock, Timeout: 10 * time.Second}, bodies
}

// SPEC §4.3 writes the request's `files` as a list and each `content` as
// base64 text. A whole request of no file (a module whose plan names none,
// a contributor of items alone, sent once per plan) and a file of no bytes
// (an empty secret written to its path) are an empty list and an empty
// text, never JSON null: a node-engine decoding into a list or a string
// refuses null (400), failing the module at every plan.
func TestARequestOfNoFileAndAnEmptyFileSendListAndTextNeverNull(t *testing.T) {
	c, bodies := recordBodies(t)
	ctx := context.Background()
	if _, err := c.Fill(ctx, Request{Module: "alpha", Whole: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := <-bodies, `{"module":"alpha","whole":true,"files":[]}`+"\n"; got != want {
		t.Errorf("a whole request of no file sent %s, want %s", got, want)
	}
	if _, err := c.Fill(ctx, Request{Module: "zsh", Files: []File{{Path: "/etc/zshrc", Form: FormOwned, Mode: "0644",
		OnChange: OnChange{Action: OnChangeNone}}}}); err == nil || !strings.Contains(err.Error(), "does not say what became of /etc/zshrc") {
		t.Fatal(err) // this engine answers no file: only what was sent is looked at here
	}
	if got, want := <-bodies, `{"module":"zsh","files":[{"path":"/etc/zshrc","form":"owned","content":"","mode":"0644","on_change":{"action":"none"}}]}`+"\n"; got != want {
		t.Errorf("an empty file sent %s, want %s", got, want)
	}
}
