package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestNoPartOfTheLabIsRefusedAnything: the lab runs the real client,
// server and vault as JWT users with exactly the rights of nodes/spec
// RightsOf (what examples/nats/server.conf grants too); through a whole
// settle, the tour's config change and stop, the bus refuses none of them
// anything (a right too narrow is a "Permissions Violation" in a part's
// log, even where the part goes on).
func TestNoPartOfTheLabIsRefusedAnything(t *testing.T) {
	var out, logs bustest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := labDir(t)
	err := Run(ctx, Config{Dir: dir, Port: 0, Once: true, Out: &out, Log: zerolog.New(&logs).Level(zerolog.DebugLevel),
		OnSettled: func(url, creds string) {
			nc, err := nats.Connect(url, nats.UserCredentials(creds))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			kv, err := js.KeyValue(ctx, spec.ConfigBucket)
			if err != nil {
				t.Error(err)
				return
			}
			for _, c := range []struct{ key, value, file string }{
				{"ace.claude-code.model", "opus-4", "ace/etc/claude-code/config.toml"},
				{"g14.grafana.smtp-host", "smtp.mesh.internal", "g14/etc/grafana/grafana.ini"},
			} {
				if _, err := kv.PutString(ctx, c.key, c.value); err != nil {
					t.Error(err)
					return
				}
				bustest.Eventually(t, 20*time.Second, func() error {
					b, err := os.ReadFile(filepath.Join(dir, "root", c.file))
					if err != nil || !strings.Contains(string(b), c.value) {
						return fmt.Errorf("%s has no %s yet (%v)", c.file, c.value, err)
					}
					return nil
				})
			}
		}})
	if err != nil {
		t.Fatalf("the lab: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "permissions violation") {
			t.Errorf("a part of the lab was refused: %s", line)
		}
	}
}
