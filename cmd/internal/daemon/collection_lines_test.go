package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Each item in a collector's file is introduced by one comment line,
// `<comment> <contributor>` (SPEC §4.4). A comment or a contributor's name
// holding a line break would make that more than one line, the rest of it
// no comment: in a shell collection, a command. Before, a comment "#\nx"
// put a line "x alpha" in the file, and a contributor named
// "evil\nrm -rf ~" put the line "rm -rf ~" in every zshrc that collects
// it. Now each fails its own module naming the field, and what the other
// modules make is untouched.
func TestACommentOrContributorNameWithALineBreakFailsItsModuleAlone(t *testing.T) {
	m := newMesh(t)
	m.contribute("ace", "alpha", "alias ll='ls -l'\n")
	m.contribute("ace", "evil\nrm -rf ~", "true\n")
	m.contribute("ace", "cr\rname", "true\n")
	m.collector("ace", "zsh")
	m.assign("ace", "broken", nodes.Plan{
		Files:       []nodes.FileSpec{{Path: "/etc/broken", Template: "rc"}},
		Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: "#\nx"}},
	}, map[string]string{"rc": "${shell:zsh:normal}"})
	m.assign("ace", "crlf", nodes.Plan{
		Files:       []nodes.FileSpec{{Path: "/etc/crlf", Template: "rc"}},
		Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: "#\r"}},
	}, map[string]string{"rc": "${shell:zsh:normal}"})
	m.client("ace")

	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\nalias ll='ls -l'\n")
	m.waitState("ace", "zsh", "applied")
	for mod, want := range map[string][]string{
		"broken":         {"collections[0]", "comment", "line break"},
		"crlf":           {"collections[0]", "comment", "line break"},
		"evil\nrm -rf ~": {"module name", "line break", "items"},
		"cr\rname":       {"module name", "line break", "items"},
	} {
		r := m.waitState("ace", mod, "failed")
		for _, w := range want {
			if !contains(fmt.Sprint(r["reason"]), w) {
				t.Errorf("%q: reason %q does not say %q", mod, r["reason"], w)
			}
		}
	}
	for _, p := range []string{"/etc/broken", "/etc/crlf"} {
		if got, _, err := m.file(p); err == nil {
			t.Errorf("%s was written: %q", p, got)
		}
	}
	for _, mod := range []string{"evil\nrm -rf ~", "cr\rname"} {
		if v, ok := m.get(spec.CollectBucket, zshKey("ace", mod)); ok {
			t.Errorf("the item of %q was recorded: %s", mod, v)
		}
	}
	m.settle()
	if got, _, _ := m.file("/etc/zsh/zshrc"); strings.Contains(got, "rm -rf") || strings.Contains(got, "\r") {
		t.Fatalf("the collector's file holds a line no comment introduces: %q", got)
	}
}

// A collections[] entry with no comment (left out, empty or blank) made
// each item's introducing line " <contributor>": no comment, and in a
// shell collection a command named after the contributor, run by every
// shell reading the file. It fails its module naming the entry; a
// collector with a comment is filled as before.
func TestACollectionWithoutACommentFailsItsCollectorAlone(t *testing.T) {
	m := newMesh(t)
	m.contribute("ace", "alpha", "alias ll='ls -l'\n")
	m.collector("ace", "zsh")
	for mod, comment := range map[string]string{"none": "", "blank": " \t"} {
		m.assign("ace", mod, nodes.Plan{
			Files:       []nodes.FileSpec{{Path: "/etc/" + mod, Template: "rc"}},
			Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: comment}},
		}, map[string]string{"rc": "${shell:zsh:normal}"})
	}
	m.client("ace")
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\nalias ll='ls -l'\n")
	for _, mod := range []string{"none", "blank"} {
		r := m.waitState("ace", mod, "failed")
		for _, w := range []string{"collections[0]", "no comment"} {
			if !contains(fmt.Sprint(r["reason"]), w) {
				t.Errorf("%s: reason %q does not say %q", mod, r["reason"], w)
			}
		}
		if got, _, err := m.file("/etc/" + mod); err == nil {
			t.Errorf("/etc/%s was written: %q", mod, got)
		}
	}
}
