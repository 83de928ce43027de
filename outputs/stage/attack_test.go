package stage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// misbehaving makes the stage fill through a node-engine that refuses
// every request with 500 and the error answer(req) says: an http.Server
// on a unix socket, standing in for a node-engine that quotes what it
// was sent.
func (r *rig) misbehaving(answer func(fill.Request) string) {
	r.t.Helper()
	dir, err := os.MkdirTemp("", "engine")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		r.t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		var req fill.Request
		json.NewDecoder(hr.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]string{"error": answer(req)})
	})}
	go srv.Serve(ln)
	r.t.Cleanup(func() { srv.Close() })
	r.s.cfg.Fill = &fill.Client{Socket: sock, Timeout: 5 * time.Second}
}

// everything is every value the stage wrote where someone may read it:
// the needs, applied and collect buckets, the events on prov.applied, its
// log, and what it says of each module (status and explain); sub nil:
// no events.
func (r *rig) everything(sub *nats.Subscription, modules ...string) string {
	r.t.Helper()
	var b strings.Builder
	ctx := context.Background()
	for _, bucket := range []string{"mesh-provisioner_needs", "mesh-provisioner_applied", "mesh-provisioner_collect"} {
		kv, err := r.js.KeyValue(ctx, bucket)
		if err != nil {
			r.t.Fatal(err)
		}
		keys, _ := kv.Keys(ctx)
		for _, k := range keys {
			v, _ := r.get(bucket, k)
			fmt.Fprintf(&b, "%s %s %s\n", bucket, k, v)
		}
	}
	for sub != nil {
		m, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		fmt.Fprintf(&b, "event %s %s\n", m.Subject, m.Data)
	}
	for _, m := range modules {
		said, _ := r.s.Said(m)
		fmt.Fprintf(&b, "said %s %+v\n", m, said)
	}
	b.WriteString(r.log.String())
	return b.String()
}

func TestANodeEngineErrorQuotingASecretReachesNoBucketEventLogOrStatus(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// The secret's value is split across two lines of the file; the
	// node-engine quotes each line, and the content base64-encoded.
	const first, second = "pQ7x-first-half-Zr2", "second-half-9LmW"
	secretFile := owned("/etc/web/db.conf", "user=app\npassword="+first+"\n"+second+"\nport=5432\n", true)
	plainFile := owned("/etc/web/web.conf", "listen 80\n", false)
	r.misbehaving(func(req fill.Request) string {
		var b strings.Builder
		for _, f := range req.Files {
			for i, line := range strings.Split(string(f.Content), "\n") {
				fmt.Fprintf(&b, "%s line %d: cannot parse %q; ", f.Path, i+1, line)
			}
			fmt.Fprintf(&b, "content was %s; ", base64.StdEncoding.EncodeToString(f.Content))
		}
		return b.String()
	})
	sub, err := r.nc.SubscribeSync("prov.applied.>")
	if err != nil {
		t.Fatal(err)
	}
	mesh := views{
		"web":   {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(plainFile), ready(secretFile)}},
		"plain": {Name: "plain", State: graph.Ready, Files: []nodes.FileView{ready(owned("/etc/plain.conf", "just text\n", false))}},
	}
	r.send(ctx, mesh, []string{"web", "plain"}, false)

	said, _ := r.s.Said("web")
	if said.State != "failed" || !strings.Contains(said.Failure, "500") || !strings.Contains(said.Failure, "/etc/web/db.conf") {
		t.Errorf("said of web %+v: want failed, with the status and the path the error names", said)
	}
	seen := r.everything(sub, "web", "plain")
	secretBytes, _ := secretFile.Bytes()
	b64 := base64.StdEncoding.EncodeToString(secretBytes)
	for _, planted := range []string{first, second, b64[:24], "password="} {
		if strings.Contains(seen, planted) {
			t.Errorf("%q reached a bucket, event, log line or status:\n%s", planted, seen)
		}
	}
	// A request carrying no secret keeps the node-engine's words, cut.
	said, _ = r.s.Said("plain")
	if !strings.Contains(said.Failure, `cannot parse "just text"`) {
		t.Errorf("the plain module's failure lost the node-engine's words: %q", said.Failure)
	}
	val, _ := r.get("mesh-provisioner_applied", "n1.plain")
	var rep report.Report
	json.Unmarshal([]byte(val), &rep)
	if rep.State != "failed" || !strings.Contains(rep.Reason, "cannot parse") {
		t.Errorf("plain's report %s", val)
	}
}

func TestANodeEngineErrorIsCutBeforeItReachesABucket(t *testing.T) {
	r := newRig(t)
	r.misbehaving(func(fill.Request) string { return strings.Repeat("no space left on device; ", 4000) })
	mesh := views{"plain": {Name: "plain", State: graph.Ready, Files: []nodes.FileView{ready(owned("/etc/plain.conf", "x\n", false))}}}
	r.send(context.Background(), mesh, []string{"plain"}, false)
	val, _ := r.get("mesh-provisioner_applied", "n1.plain")
	var rep report.Report
	json.Unmarshal([]byte(val), &rep)
	if rep.State != "failed" || len(rep.Reason) > report.MaxText+64 || !strings.Contains(rep.Reason, "no space left") {
		t.Errorf("report reason of %d bytes: %.100q…", len(rep.Reason), rep.Reason)
	}
	if said, _ := r.s.Said("plain"); len(said.Failure) > report.MaxText+64 {
		t.Errorf("the status says %d bytes of the node-engine's error", len(said.Failure))
	}
}

// smallPayload makes the rig's bus refuse messages over 64 KiB.
func smallPayload(o *server.Options) { o.MaxPayload = 64 << 10 }

func TestAReportOfThousandsOfFilesIsWrittenCutToTheBusLimit(t *testing.T) {
	r := newRig(t, smallPayload)
	ctx := context.Background()
	const n = 1500
	files := make([]nodes.FileView, n)
	for i := range files {
		files[i] = ready(owned(fmt.Sprintf("/srv/big/f%04d.conf", i), fmt.Sprintf("n=%d\n", i), false))
	}
	waiting := &nodes.ModuleView{Name: "big", State: graph.Waiting, Reason: "plan not there yet"}
	r.send(ctx, views{"big": waiting}, []string{"big"}, false)
	if val, _ := r.get("mesh-provisioner_applied", "n1.big"); !strings.Contains(val, `"waiting"`) {
		t.Fatalf("first report %s, want waiting", val)
	}

	r.send(ctx, views{"big": {Name: "big", State: graph.Ready, Files: files}}, []string{"big"}, false)
	if _, err := os.Stat(filepath.Join(r.root, "srv/big/f1499.conf")); err != nil {
		t.Fatalf("not filled: %v", err)
	}
	val, _ := r.get("mesh-provisioner_applied", "n1.big")
	var rep report.Report
	json.Unmarshal([]byte(val), &rep)
	if rep.State != "applied" || rep.FilesMore == 0 || len(rep.Files)+rep.FilesMore != n || len(val) > 64<<10 {
		t.Errorf("report of %d bytes: state %s, %d files, files_more %d; want applied, %d in all",
			len(val), rep.State, len(rep.Files), rep.FilesMore, n)
	}
	if strings.Contains(r.log.String(), "not written") {
		t.Errorf("log: %s", r.log.String())
	}
}

func TestAReportNotWrittenIsLoggedAndWrittenAtTheNextRetry(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	f := owned("/etc/web.conf", "port 80\n", false)
	r.send(ctx, views{"web": {Name: "web", State: graph.Waiting, Reason: "plan not there yet"}}, []string{"web"}, false)
	if err := r.js.DeleteKeyValue(ctx, "mesh-provisioner_applied"); err != nil {
		t.Fatal(err)
	}
	mesh := views{"web": {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(f)}}}
	r.send(ctx, mesh, []string{"web"}, false)
	// The put's failure is known once its ack is in (report.PutReports),
	// and taken in by the retry tick at the latest.
	if got := r.s.Retrying(); len(got) != 1 || got[0] != "web" {
		t.Fatalf("retrying %v, want [web]", got)
	}
	if !strings.Contains(r.log.String(), "report not written") {
		t.Errorf("a report write that failed is not logged: %s", r.log.String())
	}
	if said, _ := r.s.Said("web"); said.State != "waiting" {
		t.Errorf("said %q: the state of a report never written (the bucket says waiting)", said.State)
	}

	if _, err := r.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mesh-provisioner_applied"}); err != nil {
		t.Fatal(err)
	}
	r.send(ctx, mesh, r.s.Retrying(), false)
	if val, _ := r.get("mesh-provisioner_applied", "n1.web"); !strings.Contains(val, `"applied"`) {
		t.Errorf("after the retry the bucket holds %q", val)
	}
	if said, _ := r.s.Said("web"); said.State != "applied" || len(r.s.Retrying()) != 0 {
		t.Errorf("said %q, retrying %v after the retry", said.State, r.s.Retrying())
	}
}

func TestAnItemTheBusCannotHoldFailsItsModuleNamingTheCollection(t *testing.T) {
	r := newRig(t, smallPayload)
	ctx := context.Background()
	item := func(module, collection, text string) *nodes.ModuleView {
		return &nodes.ModuleView{Name: module, State: graph.Ready,
			Items: []nodes.ItemView{{Collection: collection, State: graph.Ready, Text: []byte(text)}}}
	}
	markup := strings.Repeat("<a&b>", 8<<10)  // 40 KiB; 240 KiB were < & > escaped
	control := strings.Repeat("\x01", 20<<10) // 20 KiB; 120 KiB encoded, escaped or not
	mesh := views{"html": item("html", "pages", markup), "ctl": item("ctl", "raw", control)}
	r.send(ctx, mesh, []string{"html", "ctl"}, false)

	if val, ok := r.get("mesh-provisioner_collect", "n1.pages.html"); !ok || !strings.Contains(val, "<a&b>") {
		t.Errorf("the markup item is not recorded as is: %.80q", val)
	}
	if val, _ := r.get("mesh-provisioner_applied", "n1.html"); !strings.Contains(val, `"applied"`) {
		t.Errorf("html's report %s", val)
	}
	val, _ := r.get("mesh-provisioner_applied", "n1.ctl")
	var rep report.Report
	json.Unmarshal([]byte(val), &rep)
	if rep.State != "failed" || !strings.Contains(rep.Reason, "collection raw") || !strings.Contains(rep.Reason, "65536") {
		t.Errorf("ctl's report %s: want failed, naming collection raw and the limit", val)
	}
	if said, _ := r.s.Said("ctl"); said.State != "failed" || said.Reason != rep.Reason {
		t.Errorf("said %+v", said)
	}
	if got := r.s.Retrying(); len(got) != 0 {
		t.Errorf("retrying %v: an item too large is too large at every try", got)
	}
	if strings.Contains(r.log.String(), "items not recorded") {
		t.Errorf("log: %s", r.log.String())
	}

	mesh["ctl"] = item("ctl", "raw", "fits now")
	r.send(ctx, mesh, []string{"ctl"}, false)
	if val, _ := r.get("mesh-provisioner_applied", "n1.ctl"); !strings.Contains(val, `"applied"`) {
		t.Errorf("once its item fits, ctl's report is %s", val)
	}
}

// Items are handed to the publisher only when they moved; after the bus
// came back (Forget) they are compared against the bus again, so an item
// the bus lost meanwhile is written by the module's next send, not only
// by a full one.
func TestAnItemTheBusLostIsWrittenAgainByTheNextSendAfterTheBusCameBack(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	f := owned("/etc/web.conf", "port 80\n", false)
	view := func(content string) *nodes.ModuleView {
		f = owned("/etc/web.conf", content, false)
		return &nodes.ModuleView{Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(f)},
			Items: []nodes.ItemView{{Collection: "hosts", State: graph.Ready, Text: []byte("web 10.0.0.1")}}}
	}
	r.send(ctx, views{"web": view("port 80\n")}, []string{"web"}, false)
	if val, ok := r.get("mesh-provisioner_collect", "n1.hosts.web"); !ok || !strings.Contains(val, "10.0.0.1") {
		t.Fatalf("item %q", val)
	}
	kv, err := r.js.KeyValue(ctx, "mesh-provisioner_collect")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "n1.hosts.web"); err != nil { // the bus lost it while the connection was away
		t.Fatal(err)
	}
	r.s.Forget()
	r.send(ctx, views{"web": view("port 81\n")}, []string{"web"}, false)
	if val, ok := r.get("mesh-provisioner_collect", "n1.hosts.web"); !ok || !strings.Contains(val, "10.0.0.1") {
		t.Errorf("after the bus came back, the item the bus lost is %q", val)
	}
}

// A node-engine's answer to a DELETE that quotes a secret the client
// holds (another module's: the module leaving holds none by then) is not
// logged; the status is.
func TestANodeEngineRefusingARemovalWithASecretInItsTextLogsNoSecret(t *testing.T) {
	const secret = "LEAK-CANARY-de1e7e-another-modules-key"
	r := newRig(t)
	r.misbehaving(func(fill.Request) string { return "cannot remove: unit says key " + secret + " is in use" })
	r.s.cfg.QuotesSecret = func(text string) bool { return strings.Contains(text, secret) }
	ctx := context.Background()
	r.s.Remove(ctx, "old")
	r.send(ctx, views{}, nil, false)
	log := r.log.String()
	if !strings.Contains(log, "did not remove") || !strings.Contains(log, "500") || !strings.Contains(log, "withheld") {
		t.Fatalf("the log does not say the removal failed with a 500, its text withheld:\n%s", log)
	}
	if strings.Contains(log, secret) {
		t.Fatalf("the log shows the secret:\n%s", log)
	}
}
