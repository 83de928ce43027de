package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// provider assigns module on node with a plan that offers only offers
// (a string entry for an offer with neither answered_by nor have).
func (m *mesh) provider(node, module string, offers ...nodes.Offer) {
	m.t.Helper()
	m.assign(node, module, nodes.Plan{Provides: offers}, nil)
}

// boundConsumer: cc on ace reads gitea's binding of gitea-read; gitea,
// on novox, offers it and its own program writes the entries.
func (m *mesh) boundConsumer() {
	m.t.Helper()
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"forge": "user = ${bound:gitea-read:as}\nurl = ${bound:gitea-read:url}\n"})
}

// waitWaiting waits for module's report to be waiting with a reason
// holding every one of says.
func (m *mesh) waitWaiting(node, module string, says ...string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report(node, module)
		b, _ := json.Marshal(r["waiting"])
		if r["state"] != "waiting" {
			return fmt.Errorf("report %v", r)
		}
		for _, s := range says {
			if !contains(string(b), s) {
				return fmt.Errorf("waiting %s does not say %q", b, s)
			}
		}
		return nil
	})
}

func TestABindingIsWaitedForUntilTheProviderBindsAndFollowsItsChanges(t *testing.T) {
	m := newMesh(t)
	m.boundConsumer()
	m.client("ace") // no gitea_bound bucket yet

	m.waitWaiting("ace", "cc", `"kind":"bound"`, `"name":"gitea-read:as"`,
		"bucket gitea_bound does not exist yet", "ace.cc.gitea-read")
	kv := m.bucket("gitea_bound") // the client looks again every Recheck
	m.waitWaiting("ace", "cc", "gitea_bound ace.cc.gitea-read: not written yet")

	// Another node's binding is not this client's.
	kv.Put(t.Context(), "g14.cc.gitea-read", []byte(`{"state":"bound","values":{"as":"x","url":"y"}}`))
	// Written, but without a key the template names.
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace"}}`)
	m.waitWaiting("ace", "cc", `"name":"gitea-read:url"`, `gitea_bound ace.cc.gitea-read: bound, but has no value \"url\" yet`)
	if _, _, err := m.file("/etc/cc/forge.toml"); err == nil {
		t.Fatal("a waiting module's file was written")
	}

	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"https://forge"}}`)
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\nurl = https://forge\n")
	m.waitState("ace", "cc", "applied")

	// The provider changes a value: the file is filled again.
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace-2","url":"https://forge"}}`)
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace-2\nurl = https://forge\n")
	m.waitState("ace", "cc", "applied")

	// Refused: the module fails with the provider's reason; bound again: applied.
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"refused","reason":"gitea does not serve gitea-read to cc"}`)
	r := m.waitState("ace", "cc", "failed")
	if !contains(fmt.Sprint(r["reason"]), "gitea_bound ace.cc.gitea-read: refused by the provider: gitea does not serve gitea-read to cc") {
		t.Fatalf("reason %q", r["reason"])
	}
	// A refusal without a reason, and an entry without a state, say so.
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"refused"}`)
	m.waitFailed("ace", "cc", "gitea_bound ace.cc.gitea-read: refused by the provider: (it gave no reason)")
	m.put("gitea_bound", "ace.cc.gitea-read", `{}`)
	m.waitWaiting("ace", "cc", "gitea_bound ace.cc.gitea-read: the entry has no state, not bound yet")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace-3","url":"https://forge"}}`)
	m.waitState("ace", "cc", "applied")
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace-3\nurl = https://forge\n")
}

func TestABindingWithALocalIsReadAtItsOwnKey(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"main"}}`)
	m.put("gitea_bound", "ace.cc.gitea-read.mirror", `{"state":"bound","values":{"as":"second"}}`)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/cc/two", Template: "t"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"},
			{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: "mirror"}},
	}, map[string]string{"t": "${bound:gitea-read:as} ${bound:gitea-read/mirror:as}\n"})
	m.client("ace")
	m.waitFile("/etc/cc/two", "main second\n")
}

// A plan that stops naming a provider and names it again later reads the
// provider's bucket afresh: a binding deleted meanwhile is waited for, not
// taken from memory.
func TestABindingDeletedWhileNoPlanReadItIsWaitedForAgain(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"u"}}`)
	m.boundConsumer()
	m.client("ace")
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\nurl = u\n")
	m.assign("ace", "cc", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}}},
		map[string]string{"forge": "static\n"})
	m.waitFile("/etc/cc/forge.toml", "static\n")
	m.waitState("ace", "cc", "applied")
	m.del("gitea_bound", "ace.cc.gitea-read")
	m.boundConsumer()
	m.waitWaiting("ace", "cc", "gitea_bound ace.cc.gitea-read: not written yet")
}

// A provider's program that writes a bound value as a JSON number or
// true/false ("port": 5432) means its text: the consumer's file is filled
// with it, as written. Before, the entry was "not a bound entry" and the
// consumer failed. A value that is an object or a list has no text: the
// consumer fails naming it; a null is a value the entry lacks.
func TestABoundValueWrittenAsANumberOrBooleanIsFilledAsItsText(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.boundConsumer()
	m.client("ace")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":5432,"url":true}}`)
	m.waitFile("/etc/cc/forge.toml", "user = 5432\nurl = true\n")
	m.waitState("ace", "cc", "applied")

	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":5.0,"url":null}}`)
	m.waitWaiting("ace", "cc", `"name":"gitea-read:url"`, `bound, but has no value \"url\" yet`)

	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"x","url":{"host":"forge"}}}`)
	m.waitFailed("ace", "cc", "gitea_bound ace.cc.gitea-read: not a bound entry: values.url is an object")

	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":-1e3,"url":"https://forge"}}`)
	m.waitFile("/etc/cc/forge.toml", "user = -1e3\nurl = https://forge\n")
}
