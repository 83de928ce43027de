package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
)

// What the node-engine side keeps and says of a file holding a secret
// (rule 5: never in a bucket, a report, a log line, an error or a state
// directory), with the real mesh-fill keeping a state directory.

// stateDirText is every file of dir, named, one after the other.
func stateDirText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			x, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s: %s\n", p, x)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A file two modules share (managed-block) where one's block holds a
// secret: the other's report must not carry the plain sha256 of the file
// on disk, which is an oracle for the secret (SPEC §5.3).
func TestASharedFileHoldingAnotherModulesSecretIsNoOracleInAnyReport(t *testing.T) {
	const secret = "LEAK-CANARY-5c6d"
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "a", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/shared.conf", Template: "t", Form: "managed-block"}},
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
	}, map[string]string{"t": "token = ${secret:tok}\n"})
	m.assign("ace", "b", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/shared.conf", Template: "t", Form: "managed-block"}},
	}, map[string]string{"t": "b = 1\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/a/tok", []byte(secret))
	m.client("ace", f.socket, refillEvery(300*time.Millisecond))
	m.waitContains("/etc/shared.conf", secret, true)
	m.waitContains("/etc/shared.conf", "b = 1", true)
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")
	time.Sleep(700 * time.Millisecond) // two refills: each module answered for the whole file
	m.settle()
	text, _, _ := m.file("/etc/shared.conf")
	sum := sha256.Sum256([]byte(text))
	oracle := hex.EncodeToString(sum[:])
	for k, s := range m.everyBucket(t.Context()) {
		if strings.Contains(s, oracle) || strings.Contains(s, secret) {
			t.Errorf("bucket %s holds the plain sha256 of the file holding a secret, or the secret: %s", k, s)
		}
	}
	for _, mod := range []string{"a", "b"} {
		r, _ := m.report("ace", mod)
		if d := reportDigests(r)["/etc/shared.conf"]; !strings.HasPrefix(d, "hmac-sha256:") {
			t.Errorf("%s's report says digest %q for the shared file, want it keyed", mod, d)
		}
	}
	if st := stateDirText(t, f.state); strings.Contains(st, oracle) || strings.Contains(st, secret) {
		t.Errorf("mesh-fill's state directory holds the secret or its file's sha256:\n%s", st)
	}
	if strings.Contains(f.log.String(), secret) {
		t.Errorf("mesh-fill's log holds the secret")
	}
}

// A secret with a line break in a managed-keys file would make lines of
// its own, each read as a key, and the node-engine keeps and names keys:
// the file fails, naming the placeholder and never the value, and nothing
// of the secret reaches mesh-fill's state, its log or a bucket.
func TestAMultiLineSecretInAManagedKeysFileFailsItAndReachesNoStateDir(t *testing.T) {
	const part = "LEAK-CANARY-bb22"
	secret := "LEAK-CANARY-aa11\n" + part + "=x"
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "c", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/c.env", Template: "t", Form: "managed-keys"}},
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
	}, map[string]string{"t": "token = ${secret:tok}\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/c/tok", []byte(secret))
	m.webModule()
	m.client("ace", f.socket)
	r := m.waitState("ace", "c", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "${secret:tok} holds a line break") {
		t.Errorf("reason %q does not name the placeholder and the line break", why)
	}
	m.waitState("ace", "web", "applied")
	m.settle()
	if _, _, err := m.file("/etc/c.env"); err == nil {
		t.Error("the managed-keys file was written")
	}
	if st := stateDirText(t, f.state); strings.Contains(st, "LEAK-CANARY") {
		t.Errorf("mesh-fill's state directory holds part of the secret:\n%s", st)
	}
	for _, text := range []string{f.log.String(), m.logs.String()} {
		if strings.Contains(text, "LEAK-CANARY") {
			t.Errorf("a log holds part of the secret")
		}
	}
	for k, s := range m.everyBucket(t.Context()) {
		if strings.Contains(s, "LEAK-CANARY") {
			t.Errorf("bucket %s holds part of the secret: %s", k, s)
		}
	}
	// A value of one line is written.
	v.Set(t.Context(), "own/c/tok", []byte("one-line"))
	m.waitFile("/etc/c.env", "token = one-line\n")
	m.waitState("ace", "c", "applied")
}

// A file holding a secret (its own path, or a template naming it): mesh-
// fill's state directory keeps no digest of it, which would be an oracle
// for the secret.
func TestMeshFillsStateDirectoryKeepsNoDigestOfASecretsFile(t *testing.T) {
	const secret = "hunter2-canary"
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "s", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/s/conf", Template: "t"}},
		Secrets: []nodes.SecretSpec{{Name: "pw", Path: "/etc/s/pw"}},
	}, map[string]string{"t": "pw = ${secret:pw}\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/s/pw", []byte(secret))
	m.client("ace", f.socket)
	m.waitFile("/etc/s/pw", secret)
	m.waitFile("/etc/s/conf", "pw = "+secret+"\n")
	m.waitState("ace", "s", "applied")
	st := stateDirText(t, f.state)
	for _, content := range []string{secret, "pw = " + secret + "\n"} {
		sum := sha256.Sum256([]byte(content))
		if oracle := hex.EncodeToString(sum[:]); strings.Contains(st, oracle) {
			t.Errorf("mesh-fill's state directory holds the sha256 of a file holding the secret:\n%s", st)
		}
	}
	if !strings.Contains(st, "/etc/s/pw") {
		t.Fatalf("the state directory does not know the file: %s", st)
	}
}
