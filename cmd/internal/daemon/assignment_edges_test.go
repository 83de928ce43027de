package daemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module whose assignment loses its provisioning after start leaves the
// provisioner as a deleted one does (SPEC §3 r2, §4.7, §5.4 r2): its files
// are removed by the node-engine, a removed report goes out, and
// prov.changed says gone; gaining it back says {"kind":"config"} again.
func TestAModuleLosingItsProvisioningLeavesAsADeletedOneDoes(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	f := m.stateFill()
	m.client("ace", f.socket)
	m.waitState("ace", "web", "applied")
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	applied, _ := m.nc.SubscribeSync("prov.applied.ace.web")
	m.nc.Flush()

	m.put(spec.AssignmentsBucket, "ace.web", `{"node":"ace","module":"web","runs":{"unit":"web.service"}}`)
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.web" || string(msg.Data) != `{"gone":true,"kind":"config"}` {
		t.Fatalf("leave event %v %v", msg, err)
	}
	ev, err := applied.NextMsg(5 * time.Second)
	var r struct{ State string }
	if err != nil || json.Unmarshal(ev.Data, &r) != nil || r.State != "removed" {
		t.Fatalf("applied event %v %v, want removed", ev, err)
	}
	m.waitGone(spec.AppliedBucket, "ace.web")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if _, _, err := m.file("/etc/web/b.conf"); err == nil {
			return fmt.Errorf("/etc/web/b.conf is still there")
		}
		return nil
	})

	m.assign("ace", "web", webPlan(), webTemplates)
	msg, err = sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.web" || string(msg.Data) != `{"kind":"config"}` {
		t.Fatalf("assign event %v %v", msg, err)
	}
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	m.waitState("ace", "web", "applied")
}

// node and module in the value must equal the key's (SPEC §3 r2): a value
// naming another fails the key's module with the reason, and writes
// nothing for the module the value names.
func TestAnAssignmentNamingAnotherNodeOrModuleFailsTheKeysModule(t *testing.T) {
	m := newMesh(t)
	p := webPlan()
	p.Files = p.Files[1:2]
	p.Templates.Ref, p.Templates.Digest = m.archive("web", webTemplates)
	for _, v := range []struct{ key, node, module, says string }{
		{"ace.web", "g14", "web", `node "g14"`},
		{"ace.cc", "ace", "web", `module "web"`},
		{"ace.md", "ace", "", `module ""`}, // "" is a name given, not the key's
	} {
		b, _ := json.Marshal(map[string]any{"node": v.node, "module": v.module, "provisioning": p})
		m.put(spec.AssignmentsBucket, v.key, string(b))
	}
	m.client("ace")
	for _, v := range []struct{ module, says string }{{"web", `"g14"`}, {"cc", `"web"`}, {"md", `module ""`}} {
		r := m.waitState("ace", v.module, "failed")
		if reason, _ := r["reason"].(string); !contains(reason, v.says) {
			t.Errorf("%s's reason %q does not say %s", v.module, reason, v.says)
		}
	}
	m.settle()
	if _, _, err := m.file("/etc/web/b.conf"); err == nil {
		t.Errorf("a refused plan's file was written")
	}
}

// A tool runner told "not assigned" asks again when prov.changed says the
// module was assigned (SPEC §5.4 r2): the ask it makes on the event is
// answered with the value, and after the gone event "not assigned" again.
func TestAnAskMadeOnTheAssignedEventIsAnswered(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.late.k", "v-late")
	m.client("ace")
	m.waitState("ace", "web", "applied")
	if r := askFor(t, m, "ace", `{"module":"late","kind":"config","key":"k"}`); r["error"] == "" {
		t.Fatalf("before it is assigned: %v", r)
	}
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.late")
	m.nc.Flush()
	m.put(spec.AssignmentsBucket, "ace.late", `{"provisioning":{}}`)
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if r := askFor(t, m, "ace", `{"module":"late","kind":"config","key":"k"}`); r["value"] != "v-late" {
		t.Fatalf("asked on the assigned event: %v", r)
	}
	m.del(spec.AssignmentsBucket, "ace.late")
	if msg, err := sub.NextMsg(5 * time.Second); err != nil || !contains(string(msg.Data), "gone") {
		t.Fatalf("gone event %v %v", msg, err)
	}
	if r := askFor(t, m, "ace", `{"module":"late","kind":"config","key":"k"}`); r["error"] == "" {
		t.Fatalf("asked on the gone event: %v", r)
	}
}

// An assignment of the provider that carries no provisioning is not the
// provisioner's (SPEC §3 r2): it holds no offers, and the provider's plan
// read is its first assignment in byte order that does (SPEC §4.6 r2).
func TestAProvidersAssignmentWithoutAPlanIsNotTheOneRead(t *testing.T) {
	m := newMesh(t)
	m.put(spec.AssignmentsBucket, "alpha.gitea", `{"node":"alpha","module":"gitea","runs":{"unit":"gitea.service"}}`)
	m.provider("beta", "gitea", helperOffer, nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://beta"}})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	m.waitFile("/etc/cc/forge", "url = https://beta\n")
	m.waitState("ace", "cc", "applied")
}

// A need that waits on for the same reason is not put again: each ask the
// vault answers "absent" (backoff), or that it does not answer, is the
// same wait, and the need's entry time stays when it began, which the
// server's sweep reads for "stood asked" (SPEC §5.2, §6.2 r2).
func TestANeedWaitingOnTheVaultIsNotPutAgainAtEachAsk(t *testing.T) {
	for _, vault := range []bool{true, false} {
		t.Run(fmt.Sprint("vault answers ", vault), func(t *testing.T) {
			m := newMesh(t)
			m.put(spec.ConfigBucket, "ace.app.model", "opus")
			m.assign("ace", "app", appPlan(), appTemplates)
			asks := m.watchVaultAsks()
			if vault {
				m.devVault() // holds nothing: every ask is "absent"
			}
			m.client("ace")
			m.waitState("ace", "app", "waiting")
			key := spec.EncodeKey("ace", "app", "secret", "api-key")
			bustest.Eventually(t, 5*time.Second, func() error { // its first ask answered (or not in time)
				if v, ok := m.get(spec.NeedsBucket, key); !ok || contains(v, "not asked yet") {
					return fmt.Errorf("need %q", v)
				}
				return nil
			})
			rev := m.revision(spec.NeedsBucket, key)
			first, _ := m.get(spec.NeedsBucket, key)
			n := len(asks.times(ownApp))
			bustest.Eventually(t, 10*time.Second, func() error {
				if got := len(asks.times(ownApp)); got < n+3 {
					return fmt.Errorf("%d asks since", got-n)
				}
				return nil
			})
			m.settle()
			if got := m.revision(spec.NeedsBucket, key); got != rev {
				v, _ := m.get(spec.NeedsBucket, key)
				t.Errorf("the need was put again (revision %d, then %d):\n%s\n%s", rev, got, first, v)
			}
		})
	}
}

// A module assigned, and one taken off, while the client is cut off from
// the bus are announced once it is back (SPEC §5.4 r2, §4.7): the new one
// with {"kind":"config"}, the one gone with "gone", its files removed and
// its report removed.
func TestModulesAssignedOrTakenOffWhileTheBusWasAwayAreAnnouncedWhenItIsBack(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}},
		map[string]string{"conf": "port=${port:smtp}\n"})
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")},
		Placement: map[string]map[string]string{"port": {"smtp": "25"}}}, map[string]string{"conf": "port=${port:smtp}\n"})
	f := m.stateFill()
	m.client("ace", f.socket)
	m.waitState("ace", "mail", "applied")
	m.waitFile("/etc/mail.conf", "port=25\n")

	bustest.Stop(m.s)
	m.s = bustest.Start(t, m.again, func(o *server.Options) { o.Port = -1 }) // same store, another port
	m.connect()
	m.del(spec.AssignmentsBucket, "ace.mail")
	m.put(spec.ConfigBucket, "ace.late.k", "v")
	m.put(spec.AssignmentsBucket, "ace.late", `{"provisioning":{}}`)
	bustest.Stop(m.s)
	m.s = bustest.Start(t, m.again)
	m.connect()
	changed := m.subjectsData("prov.changed.ace.>")

	m.waitGone(spec.AppliedBucket, "ace.mail")
	bustest.Eventually(t, 20*time.Second, func() error {
		got := changed()
		for _, want := range []string{`prov.changed.ace.late {"kind":"config"}`, `prov.changed.ace.mail {"gone":true,"kind":"config"}`} {
			if !slices.Contains(got, want) {
				return fmt.Errorf("heard %q, not %s", got, want)
			}
		}
		if _, _, err := m.file("/etc/mail.conf"); err == nil {
			return fmt.Errorf("/etc/mail.conf is still there")
		}
		return nil
	})
}

// subjectsData records "<subject> <data>" of every message on subject.
func (m *mesh) subjectsData(subject string) func() []string {
	m.t.Helper()
	var mu sync.Mutex
	var got []string
	sub, err := m.nc.Subscribe(subject, func(msg *nats.Msg) {
		mu.Lock()
		got = append(got, msg.Subject+" "+string(msg.Data))
		mu.Unlock()
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	m.t.Cleanup(func() { sub.Unsubscribe() })
	return func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
}

// One owner per path (SPEC §4.3 r2): the module refused a path another
// holds gets it once the holder leaves the node, without a new plan.
func TestAPathRefusedWhileHeldIsTakenOnceTheHolderLeaves(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "web.service")}},
		map[string]string{"conf": "web\n"})
	m.client("ace", f.socket)
	m.waitFile("/etc/x.conf", "web\n")
	m.waitState("ace", "web", "applied")
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "api.service")}},
		map[string]string{"conf": "api\n"})
	m.waitState("ace", "api", "failed")
	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitFile("/etc/x.conf", "api\n")
	m.waitState("ace", "api", "applied")
}

// The holder of a path leaves while the client is down and another module
// naming the path arrives: once started, the client has the node-engine
// remove the holder's files, and the newcomer gets the path (SPEC §4.3
// r2, §4.7 r2).
func TestAPathWhoseHolderLeftWhileTheClientWasDownGoesToTheNewcomer(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "web.service")}},
		map[string]string{"conf": "web\n"})
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	m.waitFile("/etc/x.conf", "web\n")
	m.waitState("ace", "web", "applied")
	stop()
	m.del(spec.AssignmentsBucket, "ace.web")
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "api.service")}},
		map[string]string{"conf": "api\n"})
	m.client("ace", f.socket, sameState)
	m.waitFile("/etc/x.conf", "api\n")
	m.waitState("ace", "api", "applied")
	m.waitGone(spec.AppliedBucket, "ace.web")
}
