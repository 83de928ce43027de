package examples

import (
	"path"
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestTheFillUnitAllowsEveryExampleModule: the example mesh-fill unit's
// --allow globs admit every path of the example modules (files, secrets,
// provisions) and its --allow-unit globs every unit they restart or
// reload, and nothing as broad as all of /etc.
func TestTheFillUnitAllowsEveryExampleModule(t *testing.T) {
	paths, units, err := FillAllowLists()
	if err != nil {
		t.Fatal(err)
	}
	match := func(globs []string, name string, m func(string, string) (bool, error)) bool {
		return slices.ContainsFunc(globs, func(g string) bool { ok, _ := m(g, name); return ok })
	}
	m := loadExample(t)
	for key, data := range m.Assignments {
		a, err := nodes.ParseAssignment(key, data)
		if err != nil {
			t.Fatal(err)
		}
		p := a.Provisioning
		var want []string
		for _, f := range p.Files {
			want = append(want, f.Path)
			if u := f.OnChange.Unit; u != "" && !match(units, u, path.Match) {
				t.Errorf("%s: unit %s is not allowed by %v", key, u, units)
			}
		}
		for _, s := range p.Secrets {
			want = append(want, s.Path)
		}
		for _, pr := range p.Provisions {
			want = append(want, pr.Path)
		}
		for _, w := range want {
			if w != "" && !fill.AllowsPath(paths, w) {
				t.Errorf("%s: path %s is not allowed by %v", key, w, paths)
			}
		}
	}
	for _, broad := range []string{"/etc/passwd", "/etc/shadow", "/etc/sudoers.d/x", "/root/.ssh/authorized_keys"} {
		if fill.AllowsPath(paths, broad) {
			t.Errorf("%s is allowed by %v", broad, paths)
		}
	}
}
