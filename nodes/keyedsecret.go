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
func (r *renderer) keyedSecret(in graph.In, content []byte) (Placeholder, bool) {
	t := r.t
	n, from := 0, int32(0)
	for _, pt := range t.parts {
		n += int(pt.at - from)
		from = pt.at
		ph := t.phs[pt.idx]
		v, err := r.value(in, int(pt.idx))
		if err != nil {
			return Placeholder{}, false
		}
		start := n
		n += len(v)
		if !spec.IsSecretKind(ph.Kind) || len(v) == 0 {
			continue
		}
		lineStart := bytes.LastIndexByte(content[:start], '\n') + 1
		line := content[lineStart:]
		if end := bytes.IndexByte(line, '\n'); end >= 0 {
			line = line[:end]
		}
		s := start - lineStart
		keyEnd := bytes.IndexByte(line, '=')
		if keyEnd < 0 {
			keyEnd = len(line)
		}
		if s >= keyEnd {
			continue // the value's side of the line
		}
		if first := bytes.IndexFunc(line, func(c rune) bool { return c != ' ' && c != '\t' }); first >= 0 && first < s && (line[first] == '#' || line[first] == ';') {
			continue // a comment line sets no key
		}
		if len(bytes.Trim(line[s:min(s+len(v), keyEnd)], " \t\r")) > 0 {
			return ph, true
		}
	}
	return Placeholder{}, false
}
