package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A plan moving to a new templates archive whose templates still name a
// waiting need does not delete and put that need again while the new
// archive is fetched: "deleted when no template of the module names it any
// more" (SPEC §5.2), and its entry time is when it began to wait, which
// the sweep reads for "stood asked" (SPEC §6.2 r2).
func TestANeedTheNewArchiveStillNamesIsNotPutAgain(t *testing.T) {
	m := newMesh(t)
	plan := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}}
	m.assign("ace", "mail", plan, map[string]string{"conf": "host=${config:host}\n"})
	m.client("ace")
	m.waitState("ace", "mail", "waiting")
	m.settle()
	key := "ace.mail.config.host"
	bustest.Eventually(t, 10*time.Second, func() error { // the report may be read before the need is put
		if _, ok := m.get(spec.NeedsBucket, key); !ok {
			return errors.New("need " + key + " not put yet")
		}
		return nil
	})
	rev := m.revision(spec.NeedsBucket, key)
	events := m.appliedEvents("ace")

	m.assign("ace", "mail", plan, map[string]string{"conf": "# v2\nhost=${config:host}\n"})
	m.settle()
	m.waitState("ace", "mail", "waiting")
	if got := m.revision(spec.NeedsBucket, key); got != rev {
		v, _ := m.get(spec.NeedsBucket, key)
		t.Errorf("the need was put again (revision %d, then %d): %s", rev, got, v)
	}
	t.Logf("events %v", events())
}

// A contributor moving to a new templates archive whose item renders the
// same text leaves its item in the bucket while the archive is fetched:
// the collector's file is not filled without it and again with it (its
// program restarted twice for nothing).
func TestAnItemTheNewArchiveStillRendersStaysWhileItIsFetched(t *testing.T) {
	m := newMesh(t)
	m.contribute("ace", "alpha", "alias ll='ls -l'\n")
	m.collector("ace", "zsh")
	m.client("ace")
	want := "# managed by mesh\n## alpha\nalias ll='ls -l'\n"
	m.waitFile("/etc/zsh/zshrc", want)
	m.waitState("ace", "zsh", "applied")
	m.settle()
	rev := m.revision(spec.CollectBucket, zshKey("ace", "alpha"))
	from := m.fills.count()

	m.assign("ace", "alpha", nodes.Plan{Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item2"}}},
		map[string]string{"item2": "alias ll='ls -l'\n"})
	m.settle()
	m.waitFile("/etc/zsh/zshrc", want)
	if got := m.fills.since(from); len(got) > 0 {
		t.Errorf("the collector was sent %v", got)
	}
	if got := m.revision(spec.CollectBucket, zshKey("ace", "alpha")); got != rev {
		t.Errorf("the item was written again (revision %d, then %d)", rev, got)
	}
}
