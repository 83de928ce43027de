package nodes

import (
	"bytes"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// keyedSecret is the first secret placeholder whose value stands, in a
// managed-keys file, where a line's key is: before the line's first "="
// (or on a line with none), on a line that is no comment. The node-engine
// reads the text before the first "=" as the key it manages, and keeps
// and names keys (its state directory, its conflicts, its log), so the
// secret, or its part before an "=" it holds, would reach them, as a line
// break in one would (brokenKeysLine). A value after the "=" is the
// line's value and is written.
//
// Each line is read once however many placeholders stand on it: read again
// for each, 4,096 secrets on one 16 MiB line read 64 GiB at every render.
func (r *renderer) keyedSecret(in graph.In, content []byte) (Placeholder, bool) {
	return keyedSecretOf(r.t, func(j int) ([]byte, error) { return r.value(in, j) }, content)
}

// keyedSecretOf is keyedSecret of template t, rendered to content with
// value(j) the value of t.phs[j].
func keyedSecretOf(t *Template, value func(j int) ([]byte, error), content []byte) (Placeholder, bool) {
	n, from := 0, int32(0)
	// The line content[scanned] stands on starts at lineStart; line,
	// keyEnd and first are of the line at lineAt (-1: none read yet).
	scanned, lineStart, lineAt := 0, 0, -1
	var line []byte
	keyEnd, first := 0, 0
	for _, pt := range t.parts {
		n += int(pt.at - from)
		from = pt.at
		ph := t.phs[pt.idx]
		v, err := value(int(pt.idx))
		if err != nil {
			return Placeholder{}, false
		}
		start := n
		n += len(v)
		if !spec.IsSecretKind(ph.Kind) || len(v) == 0 {
			continue
		}
		if i := bytes.LastIndexByte(content[scanned:start], '\n'); i >= 0 {
			lineStart = scanned + i + 1
		}
		scanned = start
		if lineAt != lineStart {
			lineAt = lineStart
			line = content[lineStart:]
			if end := bytes.IndexByte(line, '\n'); end >= 0 {
				line = line[:end]
			}
			if keyEnd = bytes.IndexByte(line, '='); keyEnd < 0 {
				keyEnd = len(line)
			}
			first = bytes.IndexFunc(line, func(c rune) bool { return c != ' ' && c != '\t' })
		}
		s := start - lineStart
		if s >= keyEnd {
			continue // the value's side of the line
		}
		if first >= 0 && first < s && (line[first] == '#' || line[first] == ';') {
			continue // a comment line sets no key
		}
		if len(bytes.Trim(line[s:min(s+len(v), keyEnd)], " \t\r")) > 0 {
			return ph, true
		}
	}
	return Placeholder{}, false
}
