package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A JSON null where a value's text stands is no value: a placement name
// whose value is null is not held by the plan (waited for, SPEC §4.1), a
// bound entry's value null is one the entry lacks (waited for, §4.6), an
// offer's have key null is one the have lacks (the module fails, §4.6).
// encoding/json made each the empty text: "user = " went into the file and
// the module said applied. Each, once given a value, is filled with no
// restart.
func TestANullValueIsNoValueAndIsWaitedForOrFails(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.boundConsumer()
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":null,"url":"h"}}`)
	ref, digest := m.archive("pn", map[string]string{"t": "p=${port:http}\n"})
	pn := func(http string) string {
		return `{"provisioning":{"templates":{"ref":"` + ref + `","digest":"` + digest + `"},` +
			`"files":[{"path":"/etc/pn/f","template":"t"}],"placement":{"port":{"http":` + http + `}}}}`
	}
	m.put(spec.AssignmentsBucket, "ace.pn", pn("null"))
	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[`+
		`{"provision":"gitea-read","answered_by":"helper"},{"provision":"gitea-ro","have":{"url":null}}]}}`)
	m.assign("ace", "ro", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/ro/f", Template: "t"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-ro", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"t": "url = ${bound:gitea-ro:url}\n"})
	m.client("ace")

	m.waitWaiting("ace", "pn", "placement.port.http")
	m.needSays("ace", "cc", "bound", "gitea-read:as", "waiting", `has no value "as" yet`)
	m.waitWaiting("ace", "cc", "gitea-read:as")
	m.waitFailed("ace", "ro", "gitea's offer gitea-ro has no url")
	for _, p := range []string{"/etc/pn/f", "/etc/cc/forge.toml", "/etc/ro/f"} {
		if got, _, err := m.file(p); err == nil {
			t.Errorf("%s was written (%q) from a null", p, got)
		}
	}

	m.put(spec.AssignmentsBucket, "ace.pn", pn(`"80"`))
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"u","url":"h"}}`)
	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[`+
		`{"provision":"gitea-read","answered_by":"helper"},{"provision":"gitea-ro","have":{"url":"https://ro"}}]}}`)
	m.waitFile("/etc/pn/f", "p=80\n")
	m.waitFile("/etc/cc/forge.toml", "user = u\nurl = h\n")
	m.waitFile("/etc/ro/f", "url = https://ro\n")
	for _, mod := range []string{"pn", "cc", "ro"} {
		m.waitState("ace", mod, "applied")
	}
}
