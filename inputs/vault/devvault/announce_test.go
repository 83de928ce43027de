package devvault_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A Set with a context without a deadline, and a Delete, publish
// secret-changed and log no warning: the lab's operator sees one only when
// the event did not go out.
func TestSecretChangedPublishedLogsNoWarning(t *testing.T) {
	e := newEnv(t, true)
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(context.Background(), name, []byte("changed-value-47"))
	e.vault.Set(e.ctx, name, []byte("changed-value-48"))
	e.vault.Delete(name)
	if log := e.vlog.String(); strings.Contains(log, `"level":"warn"`) {
		t.Fatalf("a published secret-changed logged a warning:\n%s", log)
	}
	if got := strings.Count(e.vlog.String(), `"message":"secret `); got != 3 {
		t.Fatalf("%d set/deleted lines logged, want 3:\n%s", got, e.vlog.String())
	}
}

// A secret-changed the bus did not take (the vault's connection closed
// under it) is still said in a warning naming the secret.
func TestSecretChangedNotPublishedWarns(t *testing.T) {
	srv := bustest.Start(t)
	nc := bustest.Connect(t, srv)
	log := &bustest.Buffer{}
	v := devvault.New(zerolog.New(log))
	if err := v.Start(nc, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	nc.Close()
	name := spec.OwnSecretName("claude-code", "api-key")
	v.Set(context.Background(), name, []byte("changed-value-49"))
	out := log.String()
	if !strings.Contains(out, `"level":"warn"`) || !strings.Contains(out, name) ||
		!strings.Contains(out, spec.VaultChangedSubject) {
		t.Fatalf("an unpublished secret-changed logged no warning naming %s:\n%s", name, out)
	}
	if strings.Contains(out, "changed-value-49") {
		t.Fatalf("the value reached the log:\n%s", out)
	}
}
