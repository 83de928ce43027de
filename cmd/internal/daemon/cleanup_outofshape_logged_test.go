package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A key out of shape under the node, deleted by the start-time clean-up
// (SPEC §4.7 r2, §2.1), is said by key, bucket and why, as a key out of
// shape the client reads is: it was deleted with a count alone, under
// "deleted keys of modules no longer on this node", so an operator who
// found it gone from the bucket had no line saying what it was or why.
func TestAKeyOutOfShapeDeletedAtStartIsLoggedByKey(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	mine := []struct{ bucket, key string }{
		{spec.NeedsBucket, "ace.m=41.config.k"},      // =41 is "A"
		{spec.AppliedBucket, "ace.bad=4"},            // "=" without two hex digits
		{spec.CollectBucket, "ace.shell=3azsh.web"},  // lower-case hex
		{spec.CollectBucket, "ace.hosts"},            // 2 tokens
		{spec.NeedsBucket, "ace.web.config.model.x"}, // 5 tokens
	}
	for _, k := range mine {
		m.put(k.bucket, k.key, `{}`)
	}
	m.client("ace")
	m.waitState("ace", "web", "applied")
	for _, k := range mine {
		m.waitGone(k.bucket, k.key)
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		logs := m.logs.String()
		for _, k := range mine {
			if !logged(logs, k.bucket, k.key) {
				return fmt.Errorf("%s %s deleted without a line saying it was out of shape:\n%s", k.bucket, k.key, logs)
			}
		}
		return nil
	})
}
