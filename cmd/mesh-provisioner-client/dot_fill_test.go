package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	fdot "gonum.org/v1/gonum/graph/formats/dot"
	"gonum.org/v1/gonum/graph/formats/dot/ast"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// dotNodes reads each node statement of a DOT graph: its id (unquoted) and
// attributes.
func dotNodes(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	f, err := fdot.ParseString(out)
	if err != nil || len(f.Graphs) != 1 {
		t.Fatalf("DOT does not parse: %v\n%s", err, out)
	}
	nodes := map[string]map[string]string{}
	for _, st := range f.Graphs[0].Stmts {
		if ns, ok := st.(*ast.NodeStmt); ok {
			attrs := map[string]string{}
			for _, a := range ns.Attrs {
				attrs[a.Key] = strings.Trim(a.Val, `"`)
			}
			nodes[strings.Trim(ns.Node.ID, `"`)] = attrs
		}
	}
	return nodes
}

// A module whose fill failed (here the fill socket did not answer; a
// node-engine refusing its files is said the same way) was drawn dark
// green, ready, by `graph dot`: every value was there, so its graph said
// ready, while its report, status and explain said failed. It is drawn as
// they say now: red, state failed. Its file keeps the colour of its value
// (met, as explain says it); a module not failed keeps its own colour.
func TestGraphDotDrawsAModuleWhoseFillFailedAsFailed(t *testing.T) {
	w, url, _ := newBareWorld(t)
	nowhere := filepath.Join(w.dir, "nowhere.sock")
	d, err := daemon.New(daemon.Config{Node: "ace", Bus: bus.Options{URL: url}, FillSocket: nowhere,
		StateDir: t.TempDir(), Control: w.sock, Refill: time.Hour, Recheck: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(dctx) }()
	t.Cleanup(func() { stop(); <-done })

	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\n")
	w.assign("db", "/etc/db/a.conf", "port = ${config:port}\n")
	w.until("fill socket "+nowhere, "status", "--control", w.sock)

	for _, args := range [][]string{nil, {"--module", "web"}} {
		code, out, errOut := runCLI(append([]string{"graph", "dot", "--control", w.sock}, args...)...)
		if code != 0 {
			t.Fatalf("graph dot %v: exit %d: %s", args, code, errOut)
		}
		ns := dotNodes(t, out)
		if web := ns["module:web"]; web["color"] != "red" || web["state"] != "failed" {
			t.Fatalf("graph dot %v: module web drawn %v, want red, failed:\n%s", args, web, out)
		}
		if f := ns["file:web:/etc/web/a.conf"]; f["color"] != "darkgreen" {
			t.Fatalf("graph dot %v: web's file drawn %v, want darkgreen (its value is there):\n%s", args, f, out)
		}
		if args == nil {
			if db := ns["module:db"]; db["color"] != "orange" || db["state"] != "waiting" {
				t.Fatalf("module db drawn %v, want orange, waiting:\n%s", db, out)
			}
		}
	}
}
