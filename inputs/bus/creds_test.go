package bus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// operatorBus runs a bus in operator mode and returns it with a maker of
// .creds files of its users.
func operatorBus(t *testing.T) (*server.Server, func(role, node string, expires time.Time, mode os.FileMode) string) {
	t.Helper()
	op, err := auth.NewOperator("test")
	if err != nil {
		t.Fatal(err)
	}
	s := bustest.Start(t, func(o *server.Options) {
		if err := op.Configure(o); err != nil {
			t.Fatal(err)
		}
	})
	dir := t.TempDir()
	return s, func(role, node string, expires time.Time, mode os.FileMode) string {
		r, err := spec.RightsOf(role, node, nil)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := op.Creds(r, expires)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, r.User+".creds")
		if err := os.WriteFile(path, creds, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
}

func TestCheckCredsNamesWhatIsWrong(t *testing.T) {
	_, mint := operatorBus(t)
	dir := t.TempDir()
	good := mint(spec.RoleClient, "ace", time.Time{}, 0o600)
	data, _ := os.ReadFile(good)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jwtOnly := string(data[:strings.Index(string(data), "-----BEGIN USER NKEY SEED")])
	for _, c := range []struct {
		name, path, says string
	}{
		{"missing", filepath.Join(dir, "none.creds"), "is missing"},
		{"unreadable", dir, "is unreadable"}, // a directory: unreadable even by root
		{"malformed", write("garbage.creds", "not a creds file\n"), "is malformed"},
		{"no seed", write("jwt-only.creds", jwtOnly), "no user nkey seed"},
		{"expired", mint(spec.RoleClient, "g14", time.Now().Add(-time.Minute), 0o600), "has expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CheckCreds(c.path, time.Now(), "")
			if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("CheckCreds(%s) = %v; want an error naming the path and saying %q", c.path, err, c.says)
			}
			if strings.Contains(err.Error(), "SUA") {
				t.Fatalf("the error carries the seed: %v", err)
			}
		})
	}
	if w, err := CheckCreds(good, time.Now(), ""); err != nil || w != "" {
		t.Errorf("a good 0600 creds file: warning %q, error %v", w, err)
	}
	open := mint(spec.RoleToolRunner, "ace", time.Time{}, 0o644)
	if w, err := CheckCreds(open, time.Now(), ""); err != nil || !strings.Contains(w, open) || !strings.Contains(w, "0644") {
		t.Errorf("a 0644 creds file: warning %q, error %v; want a warning naming the path and its mode", w, err)
	}
}

// TestConnectWithCredsInOperatorMode: a client connects with its JWT user,
// is warned of a creds file others may read, and refuses an expired one
// up front.
func TestConnectWithCredsInOperatorMode(t *testing.T) {
	s, mint := operatorBus(t)
	var logs bustest.Buffer
	path := mint(spec.RoleClient, "ace", time.Now().Add(time.Hour), 0o640)
	nc, err := Connect(Options{URL: s.ClientURL(), Creds: path, Name: "provisioner.ace", Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := nc.Flush(); err != nil || !nc.IsConnected() {
		t.Fatalf("not connected with the creds of provisioner-ace: %v, %v", err, nc.LastError())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Its JWT allows watching its own needs, not making a bucket.
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.NeedsBucket}); err == nil {
		t.Error("the client's JWT user created a bucket")
	}
	if !strings.Contains(logs.String(), path) || !strings.Contains(logs.String(), "readable by its group or others") {
		t.Errorf("no warning naming %s in the log: %s", path, logs.String())
	}

	expired := mint(spec.RoleClient, "g14", time.Now().Add(-time.Second), 0o600)
	if nc, err := Connect(Options{URL: s.ClientURL(), Creds: expired, Name: "provisioner.g14", Log: zerolog.Nop()}); err == nil {
		nc.Close()
		t.Fatal("Connect took an expired creds file")
	} else if !strings.Contains(err.Error(), expired) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Connect with an expired creds file: %v", err)
	}
}

// The creds of another node's client (a unit copied between machines)
// are refused before connecting, naming the file and the user: every
// request would go unanswered on an inbox the user may not hear. The
// node's own creds, and the server's for its own name, pass.
func TestConnectRefusesTheCredsOfAnotherNode(t *testing.T) {
	s, mint := operatorBus(t)
	g14 := mint(spec.RoleClient, "g14", time.Now().Add(time.Hour), 0o600)
	nc, err := Connect(Options{URL: s.ClientURL(), Creds: g14, Name: "provisioner.ace", Log: zerolog.Nop()})
	if err == nil {
		nc.Close()
		t.Fatal("Connect took g14's creds for ace")
	}
	if msg := err.Error(); !strings.Contains(msg, g14) || !strings.Contains(msg, "provisioner-g14") ||
		!strings.Contains(msg, "_INBOX.provisioner.ace.>") {
		t.Errorf("Connect with another node's creds: %v", err)
	}
	for _, c := range []struct{ role, node, name string }{
		{spec.RoleClient, "g14", "provisioner.g14"},
		{spec.RoleServer, "", "mesh-provisioner"},
	} {
		path := mint(c.role, c.node, time.Now().Add(time.Hour), 0o600)
		nc, err := Connect(Options{URL: s.ClientURL(), Creds: path, Name: c.name, Log: zerolog.Nop()})
		if err != nil {
			t.Fatalf("%s's own creds: %v", c.name, err)
		}
		nc.Close()
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"_INBOX.a.>", "_INBOX.a.x", true},
		{"_INBOX.a.>", "_INBOX.a", false},
		{"_INBOX.*.>", "_INBOX.a.x.y", true},
		{">", "a", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"_INBOX.b.>", "_INBOX.a.x", false},
	} {
		if got := subjectMatches(c.p, c.s); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

// TestCheckCredsSaysAFileWithoutAJWTHasNone: a file that is no creds file
// at all (the wrong file given to --creds: /etc/passwd, a password file)
// holds no JWT, and is said so with what a creds file holds, not that "its
// JWT is not a user JWT".
func TestCheckCredsSaysAFileWithoutAJWTHasNone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := CheckCreds(p, time.Now(), "")
	want := "creds file " + p + ` is malformed: no user JWT in it (a .creds file holds a "-----BEGIN NATS USER JWT-----" block and the user's nkey seed)`
	if err == nil || err.Error() != want {
		t.Fatalf("CheckCreds = %v; want %q", err, want)
	}
}
