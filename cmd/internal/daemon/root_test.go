package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// --templates-root: a module whose file:// ref lies outside the root fails
// with a reason naming the root; one below it is applied.
func TestATemplatesRefOutsideTheTemplatesRootFailsItsModule(t *testing.T) {
	m := newMesh(t)
	m.webModule() // its archive is under m.tmpl
	p := plan1("/etc/out/f")
	p.Templates.Ref, p.Templates.Digest = m.archive("out", map[string]string{"t": "x\n"})
	elsewhere := filepath.Join(t.TempDir(), "out.tar.gz")
	if err := os.Rename(filepath.Join(m.tmpl, "out.tar.gz"), elsewhere); err != nil {
		t.Fatal(err)
	}
	p.Templates.Ref = "file://" + elsewhere
	m.assign("ace", "out", p, nil)
	m.client("ace", func(c *Config) { c.TemplatesRoot = m.tmpl })

	m.waitState("ace", "web", "applied")
	r := m.waitState("ace", "out", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "outside the templates root "+m.tmpl) || !contains(why, elsewhere) {
		t.Fatalf("reason %q: want it to name the root and the ref", why)
	}
}
