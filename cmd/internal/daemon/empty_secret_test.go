package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// An empty secret is a value like any other: its file is written empty,
// the templates naming it are filled, and a consumer whose credential is
// empty is listed (SPEC §4.2 says nothing of a length).
func TestAnEmptySecretIsFilledAsEmpty(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "vs", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/vs/conf", Template: "conf"}},
		Secrets: []nodes.SecretSpec{{Name: "k", Path: "/etc/vs/k"}},
	}, map[string]string{"conf": "k = ${secret:k}\n"})
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), "own/vs/k", []byte{})
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte{})
	m.client("ace")
	m.waitFile("/etc/vs/conf", "k = \n")
	m.waitFile("/etc/vs/k", "")
	m.waitState("ace", "vs", "applied")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
}
