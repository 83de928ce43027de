package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §3 templates: an archive is used only when its SHA-256 is the plan's
// digest. The controller may publish a plan before it uploads the archive,
// or the ref may still hold an older one: the module fails saying the
// digest does not match, and the archive is fetched again (with backoff)
// until the right bytes are at the ref; then the module is applied with no
// new plan put.
func TestAnArchiveOfTheWrongDigestIsFetchedAgainUntilTheRightOneLands(t *testing.T) {
	older := map[string]string{"a": "an older template\n", "b": "b\n", "c": "c\n"}
	for _, src := range []string{"file", "obj"} {
		t.Run(src, func(t *testing.T) {
			m := newMesh(t)
			m.put(spec.ConfigBucket, "ace.web.model", "opus")
			m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
			// The right archive's bytes and digest; the ref holds an older one.
			rightRef, digest := m.archive("web", webTemplates)
			right, err := os.ReadFile(rightRef[len("file://"):])
			if err != nil {
				t.Fatal(err)
			}
			oldRef, _ := m.archive("web-older", older)
			old, err := os.ReadFile(oldRef[len("file://"):])
			if err != nil {
				t.Fatal(err)
			}

			var ref string
			var land func()
			switch src {
			case "file":
				path := filepath.Join(m.tmpl, "web-at-ref.tar.gz")
				ref = "file://" + path
				if err := os.WriteFile(path, old, 0o644); err != nil {
					t.Fatal(err)
				}
				land = func() {
					tmp := path + ".new"
					if err := os.WriteFile(tmp, right, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, path); err != nil {
						t.Fatal(err)
					}
				}
			case "obj":
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				obs, err := m.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh-artifacts"})
				if err != nil {
					t.Fatal(err)
				}
				ref = "obj://mesh-artifacts/web.tar.gz"
				if _, err := obs.PutBytes(ctx, "web.tar.gz", old); err != nil {
					t.Fatal(err)
				}
				land = func() {
					if _, err := obs.PutBytes(ctx, "web.tar.gz", right); err != nil {
						t.Fatal(err)
					}
				}
			}

			p := webPlan()
			p.Templates.Ref, p.Templates.Digest = ref, digest
			b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: p})
			m.put(spec.AssignmentsBucket, "ace.web", string(b))
			rev := m.revision(spec.AssignmentsBucket, "ace.web")
			m.client("ace")

			r := m.waitState("ace", "web", "failed")
			why := fmt.Sprint(r["reason"])
			for _, says := range []string{"digest mismatch", ref, digest} {
				if !contains(why, says) {
					t.Errorf("reason %q does not say %q", why, says)
				}
			}
			if _, _, err := m.file("/etc/web/a.conf"); err == nil {
				t.Fatal("a file was written from an archive of the wrong digest")
			}
			// Fetched again, it still fails (and says why) while the ref
			// holds the older archive.
			time.Sleep(300 * time.Millisecond)
			if r, _ := m.report("ace", "web"); r["state"] != "failed" {
				t.Fatalf("with the older archive still at the ref: %v", r)
			}

			land()
			// Its next try comes within the backoff's cap (500 ms); a loaded
			// machine under -race took more than 10 s once.
			m.waitFileFor("/etc/web/a.conf", "model = opus\nport = 8080\n", 30*time.Second)
			m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
			m.waitState("ace", "web", "applied")
			if got := m.revision(spec.AssignmentsBucket, "ace.web"); got != rev {
				t.Fatalf("the plan was put again (revision %d, was %d)", got, rev)
			}
		})
	}
}

// A plan that moves its archive to another ref, the digest kept, has it
// fetched from there: the fetch from the old ref, which holds the wrong
// bytes, stops, and the module is applied from the new one.
func TestAnArchiveMovedToAnotherRefIsFetchedFromThere(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.web.model", "opus")
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	rightRef, digest := m.archive("web", webTemplates)
	oldRef, _ := m.archive("web-older", map[string]string{"a": "older\n", "b": "b\n", "c": "c\n"})

	p := webPlan()
	p.Templates.Ref, p.Templates.Digest = oldRef, digest
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: p})
	m.put(spec.AssignmentsBucket, "ace.web", string(b))
	m.client("ace")
	if r := m.waitState("ace", "web", "failed"); !contains(fmt.Sprint(r["reason"]), "digest mismatch") {
		t.Fatalf("report %v", r)
	}

	p.Templates.Ref = rightRef
	b, _ = json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: p})
	m.put(spec.AssignmentsBucket, "ace.web", string(b))
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	m.settle()
	if r, _ := m.report("ace", "web"); r["state"] != "applied" {
		t.Fatalf("the old ref's fetch still reports: %v", r)
	}
}
