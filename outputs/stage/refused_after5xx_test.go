package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// A module filled; the refill tick's whole request fails with a 5xx, so
// its next request is whole too; then the node-engine refuses it (403),
// nothing of the module having changed. The
// refused request waits, as any refused one does (a tick, then two,
// four…): it went again at every tick (an outside audit: 32 requests in
// 150 s), as the wait was judged on the module's changed files, which
// are none, rather than on the whole request it would send.
func TestARefusalAfterAFailedWholeRequestWaitsAsAnyRefusalDoes(t *testing.T) {
	r := newRig(t)
	var status atomic.Int32
	status.Store(http.StatusOK)
	var got atomic.Int32
	dir, err := os.MkdirTemp("", "engine")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		var req fill.Request
		json.NewDecoder(hr.Body).Decode(&req)
		got.Add(1)
		w.Header().Set("Content-Type", "application/json")
		code := int(status.Load())
		w.WriteHeader(code)
		if code != http.StatusOK {
			json.NewEncoder(w).Encode(map[string]string{"error": "path not allowed"})
			return
		}
		var files []fill.FileResult
		for _, f := range req.Files {
			files = append(files, fill.FileResult{Path: f.Path, Action: fill.ActionWritten, Digest: fmt.Sprintf("sha256:%064x", 0)})
		}
		json.NewEncoder(w).Encode(fill.Response{Files: files})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.s.cfg.Fill = &fill.Client{Socket: sock, Timeout: 5 * time.Second}
	ctx := context.Background()
	c := r.clocked(time.Second)
	mesh := views{"web": {Name: "web", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(owned("/etc/web.conf", "x", false))}}}

	r.send(ctx, mesh, []string{"web"}, false) // filled
	status.Store(http.StatusInternalServerError)
	r.send(ctx, mesh, []string{"web"}, true) // the refill tick's whole request: 500
	r.mustSayFailed("web", "path not allowed")
	status.Store(http.StatusForbidden)
	var sentAt []int
	for i := 1; i <= 16; i++ {
		c.at = c.at.Add(time.Second)
		before := got.Load()
		r.tick(ctx, mesh)
		if got.Load() > before {
			sentAt = append(sentAt, i)
		}
	}
	if len(sentAt) > 5 {
		t.Errorf("over 16 ticks a second apart the refused request went at ticks %v: at every tick, not waiting longer at each refusal", sentAt)
	}
}
