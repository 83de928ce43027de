package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// fillProxy is a socket (name, beside the test's fill socket) in front of
// a real mesh-fill (to): each request is handed to hold first, which may
// wait, then passed on, then to done.
func (m *mesh) fillProxy(name, to string, hold, done func(r *http.Request)) string {
	m.t.Helper()
	sock := filepath.Join(filepath.Dir(m.sock), name)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		m.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "fill"})
	proxy.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", to)
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hold(r)
		proxy.ServeHTTP(w, r)
		done(r)
	})}
	go srv.Serve(ln)
	m.t.Cleanup(func() { srv.Close() })
	return sock
}

// deleteLast is a fillProxy that holds every DELETE until a fill request
// has been answered (or 5 s passed): the order in which a loaded
// node-engine may take a removal and a fill the client sent at once.
func (m *mesh) deleteLast(to string) string {
	m.t.Helper()
	answered := make(chan struct{})
	var once sync.Once
	return m.fillProxy("last.sock", to, func(r *http.Request) {
		if r.Method == http.MethodDelete {
			select {
			case <-answered:
			case <-time.After(5 * time.Second):
			}
		}
	}, func(r *http.Request) {
		if r.Method == http.MethodPost {
			once.Do(func() { close(answered) })
		}
	})
}

// neverFailed fails t if one of the events (subject, space, report) said
// module failed.
func neverFailed(t *testing.T, module string, events []string) {
	t.Helper()
	for _, e := range events {
		var r struct{ State, Reason string }
		json.Unmarshal([]byte(e[strings.IndexByte(e, ' ')+1:]), &r)
		if r.State == "failed" {
			t.Errorf("%s said failed: %s", module, r.Reason)
		}
	}
}

// A module that took over a path of a module that left the node while
// the client was down is not said failed at start: the node-engine's 409
// names the module that left, whose removal (SPEC §4.7 r2) the client
// sent at the same moment; its request goes again once that removal is
// answered, and the module is applied. Before, a node-engine that took
// the fill first had it reported failed (a warning "module failed", a
// failed report and event) for the moment the removal took.
func TestAModuleTakingAPathOfOneThatLeftWhileTheClientWasDownIsNeverSaidFailed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "web.service")}}, map[string]string{"conf": "web\n"})
	_, stop := m.startClient("ace", f.socket)
	m.waitFile("/etc/x.conf", "web\n")
	m.waitState("ace", "web", "applied")
	m.settle()
	stop()

	m.del(spec.AssignmentsBucket, "ace.web")
	m.assign("ace", "web2", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "web2.service")}}, map[string]string{"conf": "web2\n"})
	events := m.subjectsData(spec.AppliedSubject("ace", "web2"))
	last := m.deleteLast(f.sock)
	m.client("ace", func(c *Config) { c.FillSocket = last })
	m.waitFile("/etc/x.conf", "web2\n")
	m.waitState("ace", "web2", "applied")
	m.settle()
	neverFailed(t, "web2", events())
	if l := m.logs.String(); strings.Contains(l, `"module":"web2","state":"failed"`) {
		t.Errorf("web2 logged failed:\n%s", l)
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		if got := f.programRestarts(); !strings.Contains(got, "web2.service") {
			return fmt.Errorf("restarts %q", got)
		}
		return nil
	})
}

// The same for a key of a managed-keys file the two modules share: the
// node-engine's 409 for a key names its path, key and the module that
// left (it said only the text before, so the key's new manager was said
// failed until its refusal's wait passed), and the key's new value lands
// with the module applied and never said failed.
func TestAModuleTakingAKeyOfOneThatLeftWhileTheClientWasDownIsNeverSaidFailed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	keys := func(tmpl string) nodes.FileSpec {
		return nodes.FileSpec{Path: "/etc/x.env", Template: tmpl, Form: "managed-keys"}
	}
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{keys("env")}}, map[string]string{"env": "K=web\n"})
	_, stop := m.startClient("ace", f.socket)
	m.waitFile("/etc/x.env", "K=web\n")
	m.waitState("ace", "web", "applied")
	m.settle()
	stop()

	m.del(spec.AssignmentsBucket, "ace.web")
	m.assign("ace", "web2", nodes.Plan{Files: []nodes.FileSpec{keys("env")}}, map[string]string{"env": "K=web2\n"})
	events := m.subjectsData(spec.AppliedSubject("ace", "web2"))
	last := m.deleteLast(f.sock)
	m.client("ace", func(c *Config) { c.FillSocket = last })
	m.waitFile("/etc/x.env", "K=web2\n")
	m.waitState("ace", "web2", "applied")
	m.settle()
	neverFailed(t, "web2", events())
}
