package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A provider writes what it likes in its bucket: an entry of 60,000
// values, one nested 20,000 deep, one for a module that reads nothing of
// it, one for a local no plan names. The first fills its consumer; the
// nested one fails its consumer alone with a reason that quotes none of
// it; the others change nothing (no need, no report, no file); the
// node's other module fills.
func TestAProvidersOddEntriesHarmOnlyTheConsumerTheyAreFor(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	consumer := func(mod string) {
		m.assign("ace", mod, nodes.Plan{
			Files:      []nodes.FileSpec{{Path: "/etc/" + mod + "/f", Template: "t"}},
			Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
		}, map[string]string{"t": "v = ${bound:gitea-read:k59999}\n"})
	}
	consumer("many")
	consumer("deep")
	var many strings.Builder
	many.WriteString(`{"state":"bound","values":{`)
	for i := range 60000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"k%d":"%d"`, i, i)
	}
	many.WriteString(`}}`)
	deep := `{"state":"bound","values":{"k59999":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.many.gitea-read", many.String())
	m.put("gitea_bound", "ace.deep.gitea-read", deep)
	m.put("gitea_bound", "ace.web.gitea-read", `{"state":"refused","reason":"web reads nothing of gitea"}`)
	m.put("gitea_bound", "ace.many.gitea-read.other", `{"state":"refused","reason":"no plan names this local"}`)
	m.client("ace")
	m.waitFile("/etc/many/f", "v = 59999\n")
	m.waitState("ace", "many", "applied")
	r := m.waitState("ace", "deep", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "gitea_bound ace.deep.gitea-read") || contains(why, "[[[") || len(why) > 600 {
		t.Errorf("deep's reason %.300q does not name the entry, or quotes it", why)
	}
	m.waitState("ace", "web", "applied")
	for _, k := range m.needKeys("ace.web.") {
		if strings.Contains(k, "bound") {
			t.Errorf("web's need %s: a provider's entry for it made one", k)
		}
	}
	if keys := m.needKeys("ace.many."); len(keys) != 1 {
		t.Errorf("many's needs %v, want its one placeholder's", keys)
	}
}
