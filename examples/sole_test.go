package examples

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
)

// TestOnlyItsOwnerReachesASubject: of every user of the example mesh (the
// lab aside, which may do everything), only the one SPEC §2.3 and §5.4
// name may publish or listen to each subject below: prov.ask.ace is asked
// by ace's tool runner alone and heard by ace's client alone, a vault
// request in ace's name is made by ace's client alone and heard by the
// vault alone, and a rotation is announced by the vault alone.
func TestOnlyItsOwnerReachesASubject(t *testing.T) { forEachBus(t, testOnlyItsOwner) }

func testOnlyItsOwner(t *testing.T, mode string) {
	b := loadBus(t, mode)
	sole := []struct {
		verb, subject, owner string
	}{
		{"Publish", "prov.ask.ace", "toolrunner-ace"},
		{"Subscription", "prov.ask.ace", "provisioner-ace"},
		{"Publish", "mesh-vault.get.provisioner.ace", "provisioner-ace"},
		{"Subscription", "mesh-vault.get.provisioner.ace", "mesh-vault"},
		{"Publish", "mesh-vault.secret-changed", "mesh-vault"},
		{"Publish", "prov.applied.ace.claude-code", "provisioner-ace"},
		{"Publish", "prov.changed.ace.claude-code", "provisioner-ace"},
	}
	users := slices.Sorted(maps.Keys(fleet(t)))
	var checks []refusal
	for _, s := range sole {
		for _, u := range users {
			if u == "lab" || u == s.owner {
				continue
			}
			r := refusal{name: u + " " + s.verb + " " + s.subject, as: u, async: true,
				verb: s.verb, subject: s.subject}
			if s.verb == "Publish" {
				r.do = publish(s.subject)
			} else {
				r.do = subscribe(s.subject)
			}
			checks = append(checks, r)
		}
	}
	conns := make([]*user, len(checks))
	for i, c := range checks {
		conns[i] = connect(t, b.s, c.as)
	}
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), failWait)
			defer cancel()
			_ = c.do(ctx, conns[i])
		})
	}
	wg.Wait()
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) { conns[i].refused(t, c.verb, c.subject) })
	}
}
