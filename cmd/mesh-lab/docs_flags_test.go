package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
)

// The documents a newcomer reads, from this package's directory.
var docs = []string{"../../README.md", "../../docs/DESIGN.md", "../../examples/README.md"}

// commands are the project's commands and subcommands, as the documents
// spell them, longest first (so "mesh-provisioner-client graph explain"
// is found before "mesh-provisioner").
var commands = []struct{ pkg, name string }{
	{"mesh-provisioner-client", "mesh-provisioner-client graph explain"},
	{"mesh-provisioner-client", "mesh-provisioner-client graph dot"},
	{"mesh-provisioner-client", "mesh-provisioner-client status"},
	{"mesh-provisioner-client", "mesh-provisioner-client run"},
	{"mesh-provisioner", "mesh-provisioner serve"},
	{"mesh-provisioner", "mesh-provisioner sweep"},
	{"mesh-provisioner", "mesh-provisioner rights"},
	{"mesh-fill", "mesh-fill serve"},
	{"mesh-lab", "mesh-lab"},
}

// foreign are flags the documents give to other programs: nsc's, nats's,
// groupadd's, curl's and systemctl's (nats's --inbox-prefix: a tool runner
// asks on its own inbox; systemctl's enable --now), and --password, which
// they name as refused.
var foreign = []string{"name", "allow-pub", "allow-sub", "allow-pub-response", "history", "system", "password", "unix-socket", "inbox-prefix", "now", "max-bytes"}

var (
	flagRE  = regexp.MustCompile(`(?:^|[\s\[(|"` + "`" + `])--([a-z][a-z0-9-]*)`)
	helpRE  = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	spanRE  = regexp.MustCompile("`[^`\n]+`")
	spaceRE = regexp.MustCompile(`\s+`)
)

// TestEveryFlagTheDocsNameExists: every --flag the README, DESIGN and
// examples/README write after one of the commands (in a code span, an
// indented command line or the README's table of commands) is a flag of
// that command, as its --help lists it; any other --flag they name is a
// flag of one of them.
func TestEveryFlagTheDocsNameExists(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command")
	}
	flags := map[string][]string{} // command name -> its flags
	var all []string
	bins := map[string]string{}
	for _, c := range commands {
		bin, ok := bins[c.pkg]
		if !ok {
			bin = proctest.Build(t, "github.com/novox/mesh-provisioner/cmd/"+c.pkg, "")
			bins[c.pkg] = bin
		}
		args := append(strings.Fields(c.name)[1:], "--help")
		out, _ := exec.Command(bin, args...).CombinedOutput()
		for _, m := range helpRE.FindAllStringSubmatch(string(out), -1) {
			flags[c.name] = append(flags[c.name], m[1])
		}
		if len(flags[c.name]) == 0 {
			t.Fatalf("%s --help lists no flag:\n%s", c.name, out)
		}
		all = append(all, flags[c.name]...)
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(doc, "../../")
		for i, line := range strings.Split(string(b), "\n") {
			// The pieces of the line that are commands: its code spans,
			// or the whole line when indented as code.
			pieces := spanRE.FindAllString(line, -1)
			if strings.HasPrefix(line, "    ") {
				pieces = append(pieces, line)
			}
			if strings.HasPrefix(line, "| `mesh-") { // a row of the table of commands: its first cell
				cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), "` |")
				pieces = append(pieces, cell)
			}
			checked := map[string]bool{}
			for _, p := range pieces {
				p = spaceRE.ReplaceAllString(p, " ")
				for _, c := range commands {
					at := strings.Index(p, c.name+" ")
					if at < 0 && !strings.HasSuffix(p, c.name) {
						continue
					}
					for _, m := range flagRE.FindAllStringSubmatch(p[max(at, 0):], -1) {
						checked[m[1]] = true
						if !slices.Contains(flags[c.name], m[1]) {
							t.Errorf("%s:%d: %s has no flag --%s (it has %v)", name, i+1, c.name, m[1], flags[c.name])
						}
					}
					break
				}
			}
			for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
				if !checked[m[1]] && !slices.Contains(all, m[1]) && !slices.Contains(foreign, m[1]) {
					t.Errorf("%s:%d: no command has a flag --%s", name, i+1, m[1])
				}
			}
		}
	}
}
