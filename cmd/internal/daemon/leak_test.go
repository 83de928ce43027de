package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// leakForms are the ways a value could show: itself, and its base64 (std
// and URL, at each of the three alignments it could have inside a longer
// text) and hex (both cases).
func leakForms(value string) []string {
	forms := []string{value, hex.EncodeToString([]byte(value)), strings.ToUpper(hex.EncodeToString([]byte(value)))}
	for j := 0; j < 3; j++ {
		chunk := []byte(value[j : j+3*((len(value)-j)/3)])
		forms = append(forms, base64.StdEncoding.EncodeToString(chunk), base64.URLEncoding.EncodeToString(chunk))
	}
	j, _ := json.Marshal(value) // as a JSON string holds it (quotes and line breaks escaped)
	return append(forms, strings.Trim(string(j), `"`))
}

// searchLeaks fails for every haystack (where → its text) that shows a
// canary in any of its leakForms, a secret's prefix, or an oracle (the
// plain sha256 of a secret-bearing file); first, that each haystack of
// want holds its text, so that a search that could see nothing fails.
func searchLeaks(t *testing.T, hay, want map[string]string, canaries, oracles []string) {
	t.Helper()
	for where, w := range want {
		if !strings.Contains(hay[where], w) {
			t.Errorf("%s does not hold %q: the search would see nothing", where, w)
		}
	}
	for where, s := range hay {
		for _, c := range canaries {
			for _, f := range leakForms(c) {
				if strings.Contains(s, f) {
					i := strings.Index(s, f)
					t.Errorf("%s shows secret %q as %q: …%s…", where, c, f, s[max(0, i-120):min(len(s), i+len(f)+40)])
				}
			}
		}
		if strings.Contains(s, "LEAK-CANARY") {
			t.Errorf("%s shows a secret's prefix", where)
		}
		for _, o := range oracles {
			if strings.Contains(s, o) {
				t.Errorf("%s shows the plain sha256 of a secret-bearing file (%s)", where, o)
			}
		}
	}
}

// unixGet asks the control socket for path.
func unixGet(t *testing.T, sock, path string) string {
	t.Helper()
	code, b, err := control.NewClient(sock, 5*time.Second).Get(context.Background(), path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, b)
	}
	return string(b)
}

// everyBucket reads every revision of every key of every KV bucket, keys
// and values, deleted ones included.
func (m *mesh) everyBucket(ctx context.Context) map[string]string {
	m.t.Helper()
	out := map[string]string{}
	names := m.js.KeyValueStoreNames(ctx)
	var buckets []string
	for n := range names.Name() {
		buckets = append(buckets, n)
	}
	if err := names.Error(); err != nil {
		m.t.Fatal(err)
	}
	for _, b := range buckets {
		kv := m.kv(b)
		w, err := kv.WatchAll(ctx, jetstream.IncludeHistory())
		if err != nil {
			m.t.Fatal(err)
		}
		var sb strings.Builder
	read:
		for {
			select {
			case e := <-w.Updates():
				if e == nil {
					break read
				}
				fmt.Fprintf(&sb, "%s=%s\n", e.Key(), e.Value())
			case <-time.After(5 * time.Second):
				m.t.Fatalf("bucket %s: history not read within 5s", b)
			}
		}
		w.Stop()
		out["bucket "+b] = sb.String()
	}
	return out
}

func TestNoSecretValueLeavesTheFilledFiles(t *testing.T) {
	const (
		ownOld = "LEAK-CANARY-0a1b" // rotated away
		own    = "LEAK-CANARY-7f3a"
		prov   = "LEAK-CANARY-8b4c"
		paired = "LEAK-CANARY-9d5e"
	)
	canaries := []string{ownOld, own, prov, paired}
	m := newMesh(t)

	// Every message on the bus from the start.
	busSaid := bustest.Tap(t, m.nc, nil)

	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	m.assign("g14", "aider", consumerPlan(), nil) // absent credential
	m.assign("ace", "waiter", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "later", Path: "/etc/waiter/later"}}}, nil)
	m.assign("ace", "denied", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "no", Path: "/etc/denied/no"}}}, nil)
	v := m.devVault()
	v.Set(t.Context(), ownApp, []byte(ownOld))
	v.Set(t.Context(), provApp, []byte(prov))
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte(paired))
	v.Set(t.Context(), "own/denied/no", []byte(own))
	v.Refuse("own/denied/no", "denied by policy")

	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	m.client("ace", func(c *Config) { c.Control = sock })

	m.waitFile("/etc/app/api-key", ownOld)
	v.Set(t.Context(), ownApp, []byte(own)) // rotation
	m.waitFile("/etc/app/api-key", own)
	m.waitFile("/etc/app/app.conf", "key = "+own+"\ntoken = "+prov+"\n")
	m.waitFile("/etc/app/forge-token", prov)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.waitState("ace", "app", "applied")
	m.waitState("ace", "gitea", "applied")
	m.waitState("ace", "waiter", "waiting")
	m.waitState("ace", "denied", "failed")
	for path, md := range map[string]string{"/etc/app/api-key": "0600", "/etc/app/app.conf": "0600",
		"/etc/app/forge-token": "0400", "/etc/gitea/consumers.json": "0600"} {
		if got := mode(t, m, path); got != md {
			t.Errorf("%s: mode %s, want %s", path, got, md)
		}
	}
	if text, _, _ := m.file("/etc/gitea/consumers.json"); !strings.Contains(text, paired) {
		t.Fatalf("the consumers file does not hold the credential: %q", text)
	}

	// A plain digest of a secret or a secret-bearing file is an oracle.
	var oracles []string
	for _, p := range []string{"/etc/app/api-key", "/etc/app/app.conf", "/etc/app/other.conf",
		"/etc/app/forge-token", "/etc/gitea/consumers.json"} {
		text, _, err := m.file(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		oracles = append(oracles, hex.EncodeToString(sum[:]))
	}

	hay := map[string]string{"log": m.logs.String()}
	for _, p := range []string{"/v1/modules", "/v1/explain?module=app", "/v1/explain?module=gitea",
		"/v1/explain?module=waiter", "/v1/explain?module=denied", "/v1/graph.dot", "/v1/graph.dot?module=app",
		"/v1/graph.dot?module=gitea", "/metrics"} {
		hay["control "+p] = unixGet(t, sock, p)
	}
	for k, s := range m.everyBucket(t.Context()) {
		hay[k] = s
	}
	hay["bus"] = busSaid()

	// The search can fail: the haystacks hold what they should.
	searchLeaks(t, hay, map[string]string{
		"log": ownApp, "bus": "prov.applied.ace.app", "control /v1/graph.dot": "vault:" + ownApp,
		"control /v1/explain?module=denied": "denied by policy", "control /metrics": "provisioner_vault_asks_total",
		"bucket " + spec.AppliedBucket: "hmac-sha256:",
	}, canaries, oracles)
}
