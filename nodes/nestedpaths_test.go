package nodes

import (
	"strings"
	"testing"
)

// A path below another of the plan's is found whatever sorts between
// them ("/a-b" and "/a.b" sort between "/a" and "/a/b"); paths that only
// begin with another's text are not below it.
func TestNestedPath(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"/a", "/a-b", "/a.b", "/a/b"}, "path /a/b lies below /a, which w0 writes"},
		{[]string{"/etc/x/y/z", "/etc/x"}, "path /etc/x/y/z lies below /etc/x, which w1 writes"},
		{[]string{"/a", "/a-b", "/a.b", "/ab/c", "/b/a"}, ""},
		{[]string{"/a/b", "/a/c"}, ""},
	} {
		paths := map[string]string{}
		for i, p := range c.paths {
			paths[p] = "w" + string(rune('0'+i))
		}
		got := nestedPath(paths)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.paths, got, c.want)
		}
	}
}
