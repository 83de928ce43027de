package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Issue 19.2: mesh-config_resolved deleted and made again with new values.
// The client used to keep the old bucket's values for good (file unchanged,
// report applied, no log line). Now, at the watch's next look (every 6 Rechecks: 30 s by default, 600 ms here), the module waits
// with "does not exist yet" while the bucket is away, and the new bucket's
// values reach the files once it is back.
func TestAConfigBucketDeletedAndMadeAgainIsWaitedForThenFilledFrom(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")

	if err := m.js.DeleteKeyValue(context.Background(), spec.ConfigBucket); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "web")
		b, _ := json.Marshal(r)
		if r["state"] != "waiting" || !contains(string(b), spec.ConfigBucket+" does not exist yet") {
			return fmt.Errorf("report %s, want waiting for %s", b, spec.ConfigBucket)
		}
		return nil
	})
	if !contains(m.logs.String(), "bucket was deleted") {
		t.Errorf("no log line says the bucket was deleted:\n%s", m.logs)
	}

	m.bucket(spec.ConfigBucket)
	m.put(spec.ConfigBucket, "ace.web.model", "sonnet")
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/a.conf", "model = sonnet\nport = 8080\n")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitState("ace", "web", "applied")
}

// Deleted and made again at once, between two looks: the files still end
// with the new bucket's values (the old watcher would have skipped them:
// the new bucket's sequence starts over below the one it had reached).
func TestAConfigBucketReplacedAtOnceFillsTheNewValues(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.web.model", "opus") // the old bucket's sequence past the new one's
	m.client("ace")
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")

	if err := m.js.DeleteKeyValue(context.Background(), spec.ConfigBucket); err != nil {
		t.Fatal(err)
	}
	m.bucket(spec.ConfigBucket)
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.put(spec.ConfigBucket, "ace.web.flavour", "lemon")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		a, _, _ := m.file("/etc/web/a.conf")
		c, _, _ := m.file("/etc/web/c.conf")
		r, _ := m.report("ace", "web")
		if a != "model = haiku\nport = 8080\n" || c != "flavour = lemon\n" || r["state"] != "applied" {
			return fmt.Errorf("a.conf %q c.conf %q state %v", a, c, r["state"])
		}
		return nil
	})
}

// A stream purge leaves no delete marker: the client kept filling from the
// purged values (and prov.ask answered them) until it reconnected. Its look
// at the bucket now sees the values gone, and the module waits for them.
func TestAConfigBucketPurgedIsWaitedForAgain(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")

	st, err := m.js.Stream(context.Background(), "KV_"+spec.ConfigBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := m.waitState("ace", "web", "waiting")
	if b, _ := json.Marshal(r["waiting"]); !contains(string(b), `"name":"model"`) {
		t.Fatalf("waiting for %s, want the purged config value model", b)
	}
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.put(spec.ConfigBucket, "ace.web.flavour", "lemon")
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}
