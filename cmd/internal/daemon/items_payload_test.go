package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.4: `${collected:C}` is every item of C recorded for this node.
// An item under 512 KiB whose record the bus cannot hold (its text JSON
// escapes past the bus's max payload) is not recorded and fails its
// module: it is left out of every collector's file too, as an item that
// fails for naming a secret is, and comes in once it fits.
func TestAnItemTheBusCannotHoldIsLeftOutOfItsCollectors(t *testing.T) {
	m := newMeshOn(t, func(o *server.Options) { o.MaxPayload = 64 << 10 }, "")
	m.contribute("ace", "alpha", "alias a=b\n")
	m.contribute("ace", "ctl", strings.Repeat("\x01", 20<<10)) // 20 KiB; 120 KiB encoded
	m.collector("ace", "zsh")
	m.client("ace")

	r := m.waitState("ace", "ctl", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "collection "+zshColl) || !contains(why, "65536") {
		t.Errorf("ctl's reason %q: want it to name the collection and the bus's limit", why)
	}
	m.waitState("ace", "zsh", "applied")
	m.settle()
	if got, _, _ := m.file("/etc/zsh/zshrc"); got != "# managed by mesh\n## alpha\nalias a=b\n" {
		t.Errorf("the collector holds an item the bucket does not: %.80q", got)
	}
	if v, ok := m.get(spec.CollectBucket, zshKey("ace", "ctl")); ok {
		t.Errorf("recorded: %.80q", v)
	}

	m.contribute("ace", "ctl", "fits now\n")
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\nalias a=b\n## ctl\nfits now\n")
	m.waitState("ace", "ctl", "applied")
	m.waitValue(spec.CollectBucket, zshKey("ace", "ctl"), itemJSON(zshColl, "ctl", "fits now\n"))
}
