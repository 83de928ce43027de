package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A provider may write any key of its bucket: one writing a thousand keys
// under this node's prefix that are out of shape had the client log a
// warning for each, and again at every read of the bucket (each start,
// each return of the bus): a remote party filled the node's log, and
// journald, once its rate limit is reached, dropped the client's own
// lines with them. The warnings are rate-limited: a few said, the rest
// counted in the next one let through; the binding is filled as ever.
func TestAProviderFloodingItsBucketWithKeysOutOfShapeDoesNotFloodTheLog(t *testing.T) {
	m := newMesh(t)
	m.boundConsumer()
	kv := m.bucket("gitea_bound")
	ctx := context.Background()
	for i := range 1000 {
		if _, err := kv.Put(ctx, fmt.Sprintf("ace.junk.p.l.x%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc","url":"https://forge"}}`)
	m.client("ace")
	m.waitFile("/etc/cc/forge.toml", "user = cc\nurl = https://forge\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	n := strings.Count(m.logs.String(), "key out of shape")
	if n > 50 {
		t.Errorf("%d warnings of keys out of shape for a provider's 1000: the log is the provider's to fill", n)
	}
	if n == 0 {
		t.Error("no warning says keys out of shape were ignored")
	}
}
