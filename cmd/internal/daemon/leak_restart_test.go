package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// rootFiles is every regular file under the fill server's root, by its
// path as a plan names it.
func (m *mesh) rootFiles() map[string]string {
	m.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(m.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out["/"+strings.TrimPrefix(p, m.root+"/")] = string(b)
		}
		return err
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

// The paths a restart takes (the last run's reports read back and their
// file actions kept, the first fill waiting for the vault's first
// answers, a module gone while the client was down said gone, a
// consumer's plan that no longer parses keeping its binding, a refused
// plan keeping its path, a module whose new archive cannot be read
// keeping its needs, an ask the vault leaves unanswered keeping its
// value) each handle secrets: planted values, some shaped as JSON or
// holding quotes and line breaks, reach no bucket, no event, no log line
// (debug included, the client's and mesh-fill's), no control socket
// answer, no sweep, no state directory and no file but the ones meant to
// hold them; and each run keys the digests of the files holding them
// with a key of its own (a plain sha256 is an oracle; a key that outlived
// the process would be kept somewhere; on a bus with auth the key is
// derived again from the client's own bus secret, never kept).
func TestNoSecretValueLeavesTheFilesAcrossARestart(t *testing.T) {
	const (
		own     = "{\"LEAK-CANARY-1a2b\": \"q\\\"uote\"}\nline two" // JSON, quotes, a line break
		ownNew  = "LEAK-CANARY-1c1d'rotated'"
		prov    = "LEAK-CANARY-2c3d"
		paired  = "LEAK-CANARY-3e4f\"},{\"consumer\":\"evil\""
		keyed   = "LEAK-CANARY-4a5b"
		blocked = "LEAK-CANARY-5c6d\nsecond \"line\""
		gone    = "LEAK-CANARY-6e7f"
		refused = "LEAK-CANARY-7a8b"
		unread  = "LEAK-CANARY-8c9d"
	)
	canaries := []string{own, ownNew, prov, paired, keyed, blocked, gone, refused, unread}
	// Which files may hold which secrets.
	holds := map[string][]string{
		"/etc/app/api-key": {own, ownNew}, "/etc/app/app.conf": {own, ownNew, prov}, "/etc/app/other.conf": {own, ownNew},
		"/etc/app/forge-token": {prov}, "/etc/gitea/consumers.json": {paired}, "/etc/mk.env": {keyed},
		"/etc/shared.conf": {blocked}, "/etc/gone/secret": {gone}, "/etc/refused/secret": {refused},
		"/etc/unread/secret": {unread},
	}
	m := newMesh(t)
	f := m.stateFill()

	busSaid := bustest.Tap(t, m.nc, nil)

	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	m.assign("ace", "mk", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/mk.env", Template: "t", Form: "managed-keys"}},
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
	}, map[string]string{"t": "TOKEN=${secret:tok}\n"})
	m.assign("ace", "mb", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/shared.conf", Template: "t", Form: "managed-block"}},
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
	}, map[string]string{"t": "token = ${secret:tok}\n"})
	m.assign("ace", "mb2", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/shared.conf", Template: "t", Form: "managed-block"}},
	}, map[string]string{"t": "plain = 1\n"})
	secretModule := func(name string) nodes.Plan {
		return nodes.Plan{
			Files:   []nodes.FileSpec{{Path: "/etc/" + name + "/conf", Template: "t"}},
			Secrets: []nodes.SecretSpec{{Name: "s", Path: "/etc/" + name + "/secret"}},
		}
	}
	for _, mod := range []string{"gone", "refused", "unread"} {
		m.assign("ace", mod, secretModule(mod), map[string]string{"t": "plain = " + mod + "\n"})
	}
	v := m.devVault()
	for name, value := range map[string]string{ownApp: own, provApp: prov, pair("g14", "claude-code", ""): paired,
		"own/mk/tok": keyed, "own/mb/tok": blocked, "own/gone/s": gone, "own/refused/s": refused, "own/unread/s": unread} {
		v.Set(t.Context(), name, []byte(value))
	}

	sock := ctlSock(t)
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, withControl(sock), func(c *Config) { c.StateDir = state })
	for _, mod := range []string{"app", "gitea", "mk", "mb", "mb2", "gone", "refused", "unread"} {
		m.waitState("ace", mod, "applied")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client log:\n%s", m.logs.String())
		}
	})
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.settle()
	first := map[string]map[string]string{}
	for _, mod := range []string{"app", "gitea", "mk", "mb", "mb2", "refused", "unread"} {
		r, _ := m.report("ace", mod)
		first[mod] = reportDigests(r)
	}
	stop()

	// While the client is down: a module leaves, a plan is refused (it keeps its path), a plan moves to an
	// archive that cannot be read (its needs stay).
	m.del(spec.AssignmentsBucket, "ace.gone")
	rp := secretModule("refused")
	rp.Provisions = []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea"}} // no credential: refused
	m.assign("ace", "refused", rp, map[string]string{"t": "plain = refused\n"})
	up := secretModule("unread")
	up.Templates.Ref, up.Templates.Digest = "file://"+filepath.Join(m.tmpl, "missing.tar.gz"), "sha256:"+strings.Repeat("ab", 32)
	m.assign("ace", "unread", up, nil)

	m.startClient("ace", f.socket, withControl(sock), func(c *Config) { c.StateDir = state })
	m.waitNoFile("/etc/gone/secret")
	for mod, st := range map[string]string{"app": "applied", "gitea": "applied", "mk": "applied", "mb": "applied",
		"mb2": "applied", "refused": "failed", "unread": "waiting"} {
		m.waitState("ace", mod, st)
	}
	// A consumer's plan stops parsing: the provider keeps its credential.
	m.put(spec.AssignmentsBucket, "g14.claude-code", `{"node":"g14","module":"claude-code","provisioning":{"provisions":"oops"}}`)
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(m.logs.String(), "plan does not parse") {
			return fmt.Errorf("the broken plan is not read yet")
		}
		return nil
	})
	m.settle()
	// An ask the vault leaves unanswered keeps the value held.
	v.SetSilent(true)
	m.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"`+ownApp+`"}`))
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(m.logs.String(), "asking the vault again did not get through") {
			return fmt.Errorf("the silent ask is not said yet")
		}
		return nil
	})
	v.SetSilent(false)
	v.Set(t.Context(), ownApp, []byte(ownNew)) // a rotation after the restart
	m.waitFile("/etc/app/api-key", ownNew)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.settle()

	// On a bus with no auth each run keys the digests of the files
	// holding a secret with a key of its own (no bus secret to derive one
	// from, stage.ReportKey): every such file's digest moves at a restart.
	for mod, was := range first {
		r, _ := m.report("ace", mod)
		for p, d := range reportDigests(r) {
			if _, secret := holds[p]; !secret || d == "" {
				continue
			}
			if !strings.HasPrefix(d, "hmac-sha256:") {
				t.Errorf("%s's report: %s has digest %q, want it keyed", mod, p, d)
			}
			if was[p] == d && mod != "refused" && mod != "unread" {
				t.Errorf("%s's report: %s has digest %s in both runs: its key outlived the process", mod, p, d)
			}
		}
	}

	var oracles []string
	disk := m.rootFiles()
	for p := range holds {
		if text, ok := disk[p]; ok {
			sum := sha256.Sum256([]byte(text))
			oracles = append(oracles, hex.EncodeToString(sum[:]))
		}
	}
	hay := map[string]string{"client log": m.logs.String(), "mesh-fill log": f.log.String(),
		"mesh-fill state dir": stateDirText(t, f.state), "client state dir": stateDirText(t, state)}
	for _, p := range []string{"/v1/modules", "/v1/explain?module=app", "/v1/explain?module=gitea",
		"/v1/explain?module=mk", "/v1/explain?module=mb", "/v1/explain?module=refused", "/v1/explain?module=unread",
		"/v1/graph.dot", "/metrics", "/healthz"} {
		hay["control "+p] = unixGet(t, sock, p)
	}
	for _, what := range []string{"sweep", "needs", "applied", "collect"} {
		hay["verb "+what] = m.query(what)
	}
	for k, s := range m.everyBucket(t.Context()) {
		hay[k] = s
	}
	for p, text := range disk {
		allowed := holds[p]
		for _, c := range canaries {
			if strings.Contains(text, c) && !contains(strings.Join(allowed, "\x00"), c) {
				t.Errorf("file %s holds a secret not meant for it: %q", p, c)
			}
		}
		if _, secret := holds[p]; !secret {
			hay["file "+p] = text
		}
	}
	hay["bus"] = busSaid()

	searchLeaks(t, hay, map[string]string{
		"client log": ownApp, "bus": "prov.changed.ace.gone", "control /v1/graph.dot": "vault:" + ownApp,
		"bucket " + spec.AppliedBucket: "hmac-sha256:", "mesh-fill state dir": "/etc/mk.env", "verb applied": "refused", "verb sweep": "summary",
	}, canaries, oracles)
}
