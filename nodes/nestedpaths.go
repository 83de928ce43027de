package nodes

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// nestedPath says what is wrong when one path a plan writes (a file's, a
// secret's, a credential's) lies below another it writes: /etc/app/conf
// and /etc/app/conf/key make conf a file and a directory at once, which no
// node-engine writes (mesh-fill refuses the request, 400, at every fill;
// and a request carrying a secret has its refusal's text withheld from
// the report). SPEC §3 is silent; the plan fails at once, naming both
// entries. paths maps each path (absolute and clean) to who writes it.
// "" when no path is below another.
func nestedPath(paths map[string]string) string {
	sorted := slices.Sorted(maps.Keys(paths))
	// Every path a string begins with sorts before it, and the paths that
	// begin with it follow it at once: a stack of the paths the current
	// one begins with, its top the longest, finds a directory among them.
	var stack []string
	for _, p := range sorted {
		for len(stack) > 0 && !strings.HasPrefix(p, stack[len(stack)-1]) {
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && p[len(stack[n-1])] == '/' {
			dir := stack[n-1]
			return fmt.Sprintf("%s: path %s lies below %s, which %s writes as a file", paths[p], p, dir, paths[dir])
		}
		stack = append(stack, p)
	}
	return ""
}
