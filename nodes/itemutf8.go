package nodes

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/novox/mesh-provisioner/graph"
)

// notUTF8Where says where the first bytes of text, the item t rendered,
// that are not UTF-8 come from: t's own text (at its line: a template
// written in Latin-1, say) or the value of the placeholder that holds
// them. An item is kept in a bucket as a JSON string, so it must be UTF-8
// (renderItem); the reason sends the operator to the right place.
func (r *renderer) notUTF8Where(in graph.In, text []byte) string {
	bad := invalidUTF8At(text)
	t := r.t
	n, from, line := 0, int32(0), 1
	for _, pt := range t.parts {
		lit := t.lits[from:pt.at]
		if bad < n+len(lit) {
			break
		}
		n += len(lit)
		v, err := r.value(in, int(pt.idx))
		if err != nil {
			return "a value it names or its template holds other bytes"
		}
		if bad < n+len(v) {
			return fmt.Sprintf("the value of %s is not UTF-8 text", t.phs[pt.idx])
		}
		n += len(v)
		from, line = pt.at, int(pt.line) // a placeholder stands on one line
	}
	line += bytes.Count([]byte(t.lits[from:min(len(t.lits), int(from)+max(0, bad-n))]), []byte{'\n'})
	return fmt.Sprintf("template %s is not UTF-8 text at line %d", t.Name, line)
}

// validItem is nil when text, the item t rendered, is UTF-8 text.
func (r *renderer) validItem(in graph.In, collection string, text []byte) error {
	if utf8.Valid(text) {
		return nil
	}
	// The item is kept as a JSON string, which would hold U+FFFD where
	// the text has other bytes: the record would not be what the
	// collectors' files say.
	return fmt.Errorf("the item for collection %s (template %s) is not UTF-8 text (%s): an item is kept in a bucket as text",
		collection, r.t.Name, r.notUTF8Where(in, text))
}
