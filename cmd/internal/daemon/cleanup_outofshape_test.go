package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.7 r2: once its first load is done the client deletes every key
// under its own <node>. in the needs, applied and collect buckets that
// belongs to no module assigned to it. A key there out of shape (§2.1)
// belongs to no module: only this node's client may write under its node,
// and the server's sweep lists such a key as the client's for ever, so it
// goes too. Another node's keys, in shape or not, are left.
func TestKeysOutOfShapeUnderTheNodeAreDeletedAtStart(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	mine := []struct{ bucket, key string }{
		{spec.NeedsBucket, "ace.web.config.model.extra"}, // 5 tokens
		{spec.NeedsBucket, "ace.m=41.config.k"},          // =41 is "A"
		{spec.AppliedBucket, "ace.bad=4"},                // "=" without two hex digits
		{spec.AppliedBucket, "ace.web.extra"},            // 3 tokens
		{spec.CollectBucket, "ace.hosts"},                // 2 tokens
		{spec.CollectBucket, "ace.hosts.=FF"},            // not UTF-8
	}
	others := []struct{ bucket, key string }{
		{spec.NeedsBucket, "g14.m=41.config.k"},
		{spec.AppliedBucket, "g14.bad=4"},
		{spec.CollectBucket, "g14.hosts"},
	}
	for _, k := range append(mine, others...) {
		m.put(k.bucket, k.key, `{}`)
	}
	m.client("ace")
	m.waitState("ace", "web", "applied")
	for _, k := range mine {
		m.waitGone(k.bucket, k.key)
	}
	m.settle()
	for _, k := range others {
		if _, ok := m.get(k.bucket, k.key); !ok {
			t.Errorf("%s %s: another node's key was deleted", k.bucket, k.key)
		}
	}
	if _, ok := m.get(spec.AppliedBucket, "ace.web"); !ok {
		t.Error("the live module's report was deleted")
	}
}
