package main

import (
	"strings"
	"testing"
)

// TestAModuleNamedAsItsBusKeyWritesItIsPointedToItsName: an operator who
// copies a module's name from a bus key (`nats kv ls
// mesh-provisioner_applied` lists ace.web=2Ev2 for module web.v2, SPEC
// §2.1) and asks explain or dot of web=2Ev2 was told only that no such
// module is on the node; the answer names the module that key's token
// writes, so the name to give is plain.
func TestAModuleNamedAsItsBusKeyWritesItIsPointedToItsName(t *testing.T) {
	w := newWorld(t)
	w.assign("web.v2", "/etc/web/a.conf", "x\n")
	w.until("1 module on node ace: 1 applied.", "status", "--control", w.sock)
	want := "module web=2Ev2 is not on node ace: web=2Ev2 is how bus keys write module web.v2 (SPEC §2.1), which is: name it web.v2"
	for _, args := range [][]string{
		{"graph", "explain", "--control", w.sock, "web=2Ev2"},
		{"graph", "dot", "--module", "web=2Ev2", "--control", w.sock},
	} {
		code, out, errOut := runCLI(args...)
		if code != 1 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit 1 and %q", args, code, out, errOut, want)
		}
	}
	// a name that decodes to no module here is said as before
	code, _, errOut := runCLI("graph", "explain", "--control", w.sock, "db=2Ev2")
	if code != 1 || !strings.Contains(errOut, "module db=2Ev2 is not on node ace; modules on node ace: web.v2") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
