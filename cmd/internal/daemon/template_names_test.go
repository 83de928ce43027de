package daemon

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// dotArchive is a tar.gz as `tar -C dir -czf t.tgz .` makes it: the
// directory "./" and every member named "./<name>".
func dotArchive(members map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	for n, c := range members {
		tw.WriteHeader(&tar.Header{Name: "./" + n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(c))})
		tw.Write([]byte(c))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// A plan may name a template as the archive spells it (`tar tf` lists
// "./config.toml" for an archive made with `tar -C dir -czf t.tgz .`):
// the archive's reader drops the leading "./" of its members' names, and
// the plan's names are read the same way. Before, "./config.toml" failed
// the module with "template ./config.toml is not in the templates
// archive", though the archive listed exactly that; "config.toml" and
// "sub/t" are found as before.
func TestATemplateNamedAsTheArchiveSpellsItIsFound(t *testing.T) {
	m := newMesh(t)
	p := nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/dot/a", Template: "./config.toml"},
			{Path: "/etc/dot/b", Template: "./sub/t"},
			{Path: "/etc/dot/c", Template: "config.toml"},
		},
		Items:       []nodes.ItemSpec{{Collection: "c", Template: "./item"}},
		Collections: []nodes.CollectionSpec{{Name: "c", Comment: "#"}},
	}
	p.Files = append(p.Files, nodes.FileSpec{Path: "/etc/dot/d", Template: "coll"})
	p.Templates.Ref, p.Templates.Digest = m.rawArchive("dot.tgz", dotArchive(map[string]string{
		"config.toml": "port = ${port:http}\n", "sub/t": "sub\n", "item": "it\n", "coll": "${collected:c}",
	}))
	p.Placement = map[string]map[string]string{"port": {"http": "80"}}
	m.assign("ace", "dot", p, nil)
	m.client("ace")
	m.waitFile("/etc/dot/a", "port = 80\n")
	m.waitFile("/etc/dot/b", "sub\n")
	m.waitFile("/etc/dot/c", "port = 80\n")
	m.waitFile("/etc/dot/d", "# dot\nit\n")
	m.waitState("ace", "dot", "applied")
}
