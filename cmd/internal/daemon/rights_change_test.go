package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// changeRights starts m's server (exampleBus) again on its port and store
// with examples/nats/server.conf, user's publish rights denied the
// subjects deny names (none: as shipped). A restart, not ReloadOptions: a
// reload of a running server races inside nats-server under -race
// (setOpts against a direct get's read of its options).
func (m *mesh) changeRights(user string, deny ...string) {
	m.t.Helper()
	o := authtest.ConfigOptions(m.t, "../../../examples/nats/server.conf")
	bustest.Same(m.s)(o)
	o.NoLog, o.NoSigs = true, true
	found := false
	for _, u := range o.Users {
		if u.Username != user {
			continue
		}
		found = true
		if len(deny) > 0 {
			p := *u.Permissions
			pub := *p.Publish
			pub.Deny = append(append([]string{}, pub.Deny...), deny...)
			p.Publish = &pub
			u.Permissions = &p
		}
	}
	if !found {
		m.t.Fatalf("no user %s in the example config", user)
	}
	m.restartWith(o)
}

// restartWith stops m's server and starts it with o, the test connected
// to it again.
func (m *mesh) restartWith(o *server.Options) {
	m.t.Helper()
	bustest.Stop(m.s)
	m.s = bustest.Run(m.t, o)
	m.connect()
}

// The client's rights narrowed at runtime (a nats-server config change
// that, by mistake, denies it writing its reports, needs and items) and
// given back: what changed meanwhile is filled, and its report, its new
// need and its item, refused by the bus, are written once the rights are
// back, with no further change.
func TestOutputsRefusedByARightsChangeAreWrittenOnceTheRightsAreBack(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.contribute("ace", "alpha", "a\n")
	m.client("ace", asUser("provisioner-ace"))
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	before := m.waitState("ace", "web", "applied")
	m.waitState("ace", "alpha", "applied")
	item := zshKey("ace", "alpha")
	wantItem := itemJSON(zshColl, "alpha", "b\n")

	m.changeRights("provisioner-ace", "$KV."+spec.AppliedBucket+".>", "$KV."+spec.NeedsBucket+".>", "$KV."+spec.CollectBucket+".>")
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.contribute("ace", "alpha", "b\n")
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}},
		map[string]string{"conf": "host=${config:host}\n"})
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	time.Sleep(time.Second)
	if r, _ := m.report("ace", "web"); fmt.Sprint(r["files"]) != fmt.Sprint(before["files"]) {
		t.Fatalf("the report was written while the bus refused it: %v", r)
	}
	if v, _ := m.get(spec.CollectBucket, item); v == wantItem {
		t.Fatal("the item was written while the bus refused it")
	}

	m.changeRights("provisioner-ace")
	bustest.Eventually(t, 30*time.Second, func() error {
		r, _ := m.report("ace", "web")
		if r["state"] != "applied" || fmt.Sprint(r["files"]) == fmt.Sprint(before["files"]) {
			return fmt.Errorf("report %v, still the one before the change", r)
		}
		if v, _ := m.get(spec.CollectBucket, item); v != wantItem {
			return fmt.Errorf("item %s, want %s", v, wantItem)
		}
		if v, ok := m.get(spec.NeedsBucket, "ace.mail.config.host"); !ok || !contains(v, "waiting") {
			return fmt.Errorf("mail's need of host %q (present %v)", v, ok)
		}
		if r, _ := m.report("ace", "mail"); r["state"] != "waiting" {
			return fmt.Errorf("mail's report %v", r)
		}
		return nil
	})
}

// A module taken off while the bus refuses the client's deletes (its
// rights narrowed by a config change): its needs and report, not deleted, are
// deleted once the rights are back, with no further change (SPEC §4.7: a
// delete that fails is tried again at every tick until it holds).
func TestKeysOfAModuleGoneWhileTheirDeletesWereRefusedAreDeletedOnceAllowed(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.client("ace", asUser("provisioner-ace"))
	m.waitState("ace", "web", "applied")
	if _, ok := m.get(spec.NeedsBucket, "ace.web.config.model"); !ok {
		t.Fatal("no need of web's model")
	}

	m.changeRights("provisioner-ace", "$KV."+spec.AppliedBucket+".>", "$KV."+spec.NeedsBucket+".>")
	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitNoFile("/etc/web/a.conf")
	time.Sleep(time.Second)
	if _, ok := m.get(spec.NeedsBucket, "ace.web.config.model"); !ok {
		t.Fatal("the need went though the bus refused its delete")
	}

	m.changeRights("provisioner-ace")
	bustest.Eventually(t, 30*time.Second, func() error {
		for _, k := range []string{"ace.web.config.model", "ace.web.config.flavour"} {
			if v, ok := m.get(spec.NeedsBucket, k); ok {
				return fmt.Errorf("need %s still there: %s", k, v)
			}
		}
		if r, ok := m.report("ace", "web"); ok {
			return fmt.Errorf("report still there: %v", r)
		}
		return nil
	})
}

// The client's user taken out of the bus's config (its password changed): nats.go gives up on a connection the server refuses
// twice, so Run ends with the reason (DESIGN: a connection closed for good
// ends the daemon, and its supervisor starts it again), the files left as
// they are; started again once the user is back, it applies as before.
func TestAClientWhoseUserIsRevokedAtRuntimeEndsNamingWhyAndStartsAgainOnceItIsBack(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	state := t.TempDir()
	cfg := Config{
		Node: "ace", Bus: bus.Options{URL: m.s.ClientURL(), User: "provisioner-ace", Password: "dev-only-provisioner-ace"},
		FillSocket: m.sock, StateDir: state, Refill: time.Hour, Recheck: 100 * time.Millisecond,
		VaultTimeout: 300 * time.Millisecond, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Log: zerolog.New(m.logs),
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- d.Run(ctx) }()
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")

	o := authtest.ConfigOptions(m.t, "../../../examples/nats/server.conf")
	bustest.Same(m.s)(o)
	o.NoLog, o.NoSigs = true, true
	for _, u := range o.Users {
		if u.Username == "provisioner-ace" {
			u.Password = "revoked"
		}
	}
	m.restartWith(o)
	select {
	case err := <-ended:
		if err == nil || !contains(err.Error(), "bus connection closed") {
			t.Fatalf("Run ended with %v, want the bus connection closed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end though the bus refuses the client's user")
	}
	if got, _, _ := m.file("/etc/web/a.conf"); got != "model = opus\nport = 8080\n" {
		t.Fatalf("a.conf %q after the client ended", got)
	}

	m.changeRights("provisioner-ace")
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.client("ace", asUser("provisioner-ace"), func(c *Config) { c.StateDir = state })
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

// A put the bus refuses holds no other change: the bus answers it with a
// permission violation on the connection and no ack, and the stage
// records a batch's items before it sends its fills. Before, the wait for
// that ack ran its whole 10 s (report.ackWait), every change meanwhile
// held behind it (a config change put 0.3 s after an item refused reached
// its file 9.8 s later); the violation now ends it (report.Refused).
func TestAnItemPutTheBusRefusesHoldsNoOtherChange(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.contribute("ace", "alpha", "a\n")
	m.client("ace", asUser("provisioner-ace"))
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "alpha", "applied")

	m.changeRights("provisioner-ace", "$KV."+spec.CollectBucket+".>")
	m.contribute("ace", "alpha", "b\n")
	time.Sleep(300 * time.Millisecond) // the item's put sent, refused
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.waitFileFor("/etc/web/a.conf", "model = haiku\nport = 8080\n", 4*time.Second)
}
