package lab

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// TestNoSecretOfTheLabLeavesItsFiles plants the example secrets (the dev
// vault holds them), runs the whole lab, and searches every message on
// every subject from the start, every key and value of every bucket, all
// logs and output, and each client's explain, status, DOT and metrics: a
// secret's value is found only in the files filled for it.
func TestNoSecretOfTheLabLeavesItsFiles(t *testing.T) {
	sub, err := fs.Sub(examples.Files, "mesh")
	if err != nil {
		t.Fatal(err)
	}
	m, err := examples.LoadMesh(sub)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, v := range m.Secrets {
		secrets = append(secrets, v)
	}
	dir := labDir(t)
	var out, logs bustest.Buffer
	var mu sync.Mutex
	var seen strings.Builder
	record := func(s string) { mu.Lock(); seen.WriteString(s); seen.WriteByte('\n'); mu.Unlock() }
	var busNC *nats.Conn
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err = Run(ctx, Config{
		Dir: dir, Once: true, Out: &out, Log: zerolog.New(&logs).Level(zerolog.DebugLevel),
		OnBus: func(url, creds string) {
			nc, err := nats.Connect(url, nats.UserCredentials(creds))
			if err != nil {
				t.Errorf("listening to the bus: %v", err)
				return
			}
			busNC = nc
			nc.Subscribe(">", func(msg *nats.Msg) {
				record(msg.Subject + " " + string(msg.Data) + fmt.Sprint(msg.Header))
			})
		},
		OnSettled: func(url, creds string) {
			record(everyBucket(t, url, creds))
			for _, node := range []string{"ace", "g14"} {
				sock := filepath.Join(dir, node, "control.sock")
				for _, path := range []string{"/v1/modules", "/v1/graph.dot", "/metrics",
					"/v1/explain?module=claude-code", "/v1/explain?module=gitea", "/v1/explain?module=grafana", "/v1/explain?module=zsh"} {
					record(controlText(t, sock, path))
				}
			}
		},
	})
	if busNC != nil {
		busNC.Close()
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	record(out.String())
	record(logs.String())
	mu.Lock()
	haystack := seen.String()
	mu.Unlock()
	if len(haystack) < 10000 {
		t.Fatalf("the scan read only %d bytes: it proves nothing", len(haystack))
	}
	for _, s := range secrets {
		for form, v := range map[string]string{
			"plain": s, "hex": hex.EncodeToString([]byte(s)),
			"base64": base64.StdEncoding.EncodeToString([]byte(s)),
		} {
			if strings.Contains(haystack, v) {
				t.Errorf("the secret %.12s… (%s) left the filled files", s, form)
			}
		}
	}
	key := readFile(t, dir, "ace", "/etc/claude-code/api-key")
	if key != m.Secrets["own/claude-code/api-key"] {
		t.Errorf("the api-key file holds %d bytes, not the secret", len(key))
	}
	st, err := os.Stat(filepath.Join(dir, "root", "ace", "etc", "claude-code", "api-key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("api-key mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
}

// everyBucket reads every revision of every key of every key-value bucket.
func everyBucket(t *testing.T, url, creds string) string {
	nc, err := nats.Connect(url, nats.UserCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	names := js.KeyValueStoreNames(ctx)
	for name := range names.Name() {
		kv, err := js.KeyValue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := kv.Keys(ctx)
		if err != nil {
			continue // an empty bucket
		}
		for _, k := range keys {
			hist, _ := kv.History(ctx, k)
			for _, e := range hist {
				fmt.Fprintf(&b, "%s %s %s\n", name, k, e.Value())
			}
		}
	}
	if b.Len() == 0 {
		t.Fatal("no bucket read")
	}
	return b.String()
}

func controlText(t *testing.T, sock, path string) string {
	_, b, err := control.NewClient(sock, 10*time.Second).Get(context.Background(), path)
	if err != nil {
		t.Errorf("control %s %s: %v", sock, path, err)
		return ""
	}
	return string(b)
}
