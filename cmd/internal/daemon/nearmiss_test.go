package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A writer that encodes names otherwise than SPEC §2.1 says — a config key
// written unencoded (ace.app.db.url for the key db.url), a provider
// escaping '-' (ace.claude=2Dcode.gitea-read) or writing lower-case hex —
// puts a key out of shape, which the client ignores and warns of in its
// log. The need it was meant for waited "not written yet", and the report
// and explain said nothing of it. The need's why now names the key out of
// shape that reads as the one it waits for, and why that key is out of
// shape; once the key is written in shape the value is filled.
func TestANeedSaysTheKeyOutOfShapeMeantForIt(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "claude-code", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/c.toml", Template: "c"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"c": "db = ${config:db.url}\nas = ${bound:gitea-read:as}\n"})
	m.put(spec.ConfigBucket, "ace.claude-code.db.url", "pg://x")                                   // '.' not encoded
	m.put("gitea_bound", "ace.claude=2Dcode.gitea-read", `{"state":"bound","values":{"as":"me"}}`) // '-' escaped
	m.client("ace")
	m.waitWaiting("ace", "claude-code",
		`mesh-config_resolved ace.claude-code.db=2Eurl: not written yet; the bucket holds ace.claude-code.db.url, out of shape (`,
		`gitea_bound ace.claude-code.gitea-read: not written yet; the bucket holds ace.claude=2Dcode.gitea-read, out of shape (`)
	m.needSays("ace", "claude-code", "config", "db.url", "waiting", "the bucket holds ace.claude-code.db.url, out of shape")

	m.put(spec.ConfigBucket, "ace.claude-code.db=2Eurl", "pg://x")
	m.put("gitea_bound", "ace.claude-code.gitea-read", `{"state":"bound","values":{"as":"me"}}`)
	m.waitFile("/etc/cc/c.toml", "db = pg://x\nas = me\n")
	m.waitState("ace", "claude-code", "applied")
}
