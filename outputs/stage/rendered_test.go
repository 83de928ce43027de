package stage

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// registered is a real node graph of node n1 whose registry names every
// kind.
func registered() *nodes.NodeGraph {
	m := nodes.NewNodeGraph("n1")
	for _, r := range spec.Kinds() {
		m.Put(spec.RegistryBucket, string(r.Kind), []byte(`{"kind":"`+string(r.Kind)+`"}`))
	}
	return m
}

// renderedMesh is a real node graph of node n1 with module web: a plain
// templated file reading a config value, and a templated file holding a
// secret (planted).
func renderedMesh(t *testing.T, planted string) *nodes.NodeGraph {
	t.Helper()
	m := registered()
	digest := "sha256:" + strings.Repeat("a", 64)
	plan, _ := json.Marshal(nodes.Assignment{Node: "n1", Module: "web", Provisioning: nodes.Plan{
		Templates: nodes.TemplatesRef{Ref: "file:///t/web.tar", Digest: digest},
		Files: []nodes.FileSpec{{Path: "/etc/web.conf", Template: "web", Form: fill.FormOwned},
			{Path: "/etc/db.conf", Template: "db", Form: fill.FormOwned}},
		Secrets: []nodes.SecretSpec{{Name: "db"}},
	}})
	if err := m.Put(spec.AssignmentsBucket, "n1.web", plan).Refused; err != nil {
		t.Fatal(err)
	}
	m.SetArchive("web", digest, map[string][]byte{
		"web": []byte("model=${config:model}\n"),
		"db":  []byte("user=app\npassword=${secret:db}\n"),
	})
	m.Put(spec.ConfigBucket, "n1.web.model", []byte("opus"))
	for _, s := range m.TakeNewSecrets() {
		m.SetSecret(s, []byte(planted), time.Time{})
	}
	m.Stabilize()
	return m
}

// onDisk is what the fill socket wrote at path.
func (r *rig) onDisk(path string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, path))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// reportOfWeb is web's report on the bus, by path.
func (r *rig) reportOfWeb() (report.Report, map[string]report.File) {
	r.t.Helper()
	val, _ := r.get("mesh-provisioner_applied", "n1.web")
	var rep report.Report
	if err := json.Unmarshal([]byte(val), &rep); err != nil {
		r.t.Fatalf("report %q: %v", val, err)
	}
	files := map[string]report.File{}
	for _, f := range rep.Files {
		files[f.Path] = f
	}
	return rep, files
}

func TestAFileKeptAsASumIsSentWithTheBytesItSums(t *testing.T) {
	const planted = "Zq8-planted-secret-4Kx"
	r := newRig(t)
	ctx := context.Background()
	m := renderedMesh(t, planted)
	conf := func() *nodes.FileValue { return m.View("web").Files[0].Value }
	if !conf().Held() {
		t.Fatal("a file just rendered does not hold its bytes for the stage")
	}

	r.send(ctx, m, []string{"web"}, false)
	if got := r.onDisk("etc/web.conf"); got != "model=opus\n" {
		t.Fatalf("web.conf %q", got)
	}
	if conf().Held() || m.View("web").Files[1].Value.Held() {
		t.Error("a value still holds its bytes once they were taken into a fill request")
	}
	rep, files := r.reportOfWeb()
	wantDB := "user=app\npassword=" + planted + "\n"
	if rep.State != "applied" || files["/etc/db.conf"].Digest != secretDigest([]byte("k"), "/etc/db.conf", []byte(wantDB)) {
		t.Fatalf("report %+v: want applied, db.conf's digest keyed from its bytes", rep)
	}
	if conf().Digest() != files["/etc/web.conf"].Digest {
		t.Errorf("web.conf's value sums %s, the node-engine wrote %s", conf().Digest(), files["/etc/web.conf"].Digest)
	}
	r.fillCount()

	// A put: the file that reads it is sent alone, with its new bytes.
	m.Put(spec.ConfigBucket, "n1.web.model", []byte("haiku"))
	r.send(ctx, m, m.Stabilize(), false)
	req := <-r.fills
	if len(req.Files) != 1 || req.Files[0].Path != "/etc/web.conf" || string(req.Files[0].Content) != "model=haiku\n" {
		t.Fatalf("after a put the request carried %+v; want web.conf alone, new bytes", req.Files)
	}
	if _, files = r.reportOfWeb(); files["/etc/web.conf"].Digest != conf().Digest() || r.onDisk("etc/web.conf") != "model=haiku\n" {
		t.Errorf("web.conf reported %s, its value sums %s", files["/etc/web.conf"].Digest, conf().Digest())
	}

	// The refill: every file, rendered again from its node, the same bytes.
	again := m.Renders().Again.Load()
	r.send(ctx, m, m.Modules(), true)
	req = <-r.fills
	got := map[string]string{}
	for _, f := range req.Files {
		got[f.Path] = string(f.Content)
	}
	if got["/etc/web.conf"] != "model=haiku\n" || got["/etc/db.conf"] != wantDB {
		t.Errorf("the refill sent %q", got)
	}
	if n := m.Renders().Again.Load() - again; n != 2 {
		t.Errorf("the refill rendered %d files again, want 2", n)
	}
	if _, files = r.reportOfWeb(); files["/etc/db.conf"].Digest != secretDigest([]byte("k"), "/etc/db.conf", []byte(wantDB)) {
		t.Errorf("db.conf's digest after the refill %s", files["/etc/db.conf"].Digest)
	}
	if seen := r.everything(nil, "web"); strings.Contains(seen, planted) {
		t.Errorf("the secret reached a bucket, log line or status:\n%s", seen)
	}
}

func TestAFileRenderedAgainToOtherBytesIsNotSent(t *testing.T) {
	const planted = "Wm3-planted-secret-7Qa"
	r := newRig(t)
	ctx := context.Background()
	m := renderedMesh(t, planted)
	r.send(ctx, m, []string{"web"}, false)
	r.fillCount()

	// The config leaf moves with no stabilization: the file's value is
	// still the old one, but its node would render other bytes now.
	m.Put(spec.ConfigBucket, "n1.web.model", []byte("sonnet"))
	r.send(ctx, m, []string{"web"}, true)
	if n := r.fillCount(); n != 0 {
		t.Fatalf("%d fill requests with bytes that are not the file's value", n)
	}
	said, _ := r.s.Said("web")
	if said.State != "failed" || !strings.Contains(said.Failure, "/etc/web.conf") ||
		!strings.Contains(said.Failure, "rendered again") || strings.Contains(said.Failure, "sonnet") {
		t.Fatalf("said %+v: want failed, naming the file and not its bytes", said)
	}
	if r.onDisk("etc/web.conf") != "model=opus\n" {
		t.Fatal("other bytes reached the file")
	}

	// Stabilized: the file's new value is sent, and the failure clears.
	r.send(ctx, m, m.Stabilize(), false)
	if got := r.onDisk("etc/web.conf"); got != "model=sonnet\n" {
		t.Fatalf("web.conf %q after the stabilization", got)
	}
	if said, _ := r.s.Said("web"); said.State != "applied" || said.Failure != "" {
		t.Errorf("said %+v after the stabilization", said)
	}
	if seen := r.everything(nil, "web"); strings.Contains(seen, planted) {
		t.Errorf("the secret reached a bucket, log line or status:\n%s", seen)
	}
}
