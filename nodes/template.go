package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// ErrLimit is matched (errors.Is) by every error that refuses something for
// being over one of the limits above.
var ErrLimit = errors.New("over a limit")

// CollectionName is the collection a collection placeholder names:
// ${collected:C} names C, ${shell:zsh:normal} names "shell:zsh:normal".
// It is "" for a placeholder of any other kind.
func CollectionName(p Placeholder) string {
	switch {
	case p.Kind == spec.Collected:
		return p.Name
	case spec.IsCollectionKind(p.Kind):
		return string(p.Kind) + ":" + p.Name
	}
	return ""
}

// ParseBoundName splits the name of ${bound:X[/L]:K} (that is "X[/L]:K")
// into the provision X, the local L ("" when absent) and the key K. It is
// split at the first ':' (K may hold ':'), then at the first '/'.
func ParseBoundName(name string) (provision, local, key string, err error) {
	i := strings.IndexByte(name, ':')
	if i < 0 {
		return "", "", "", fmt.Errorf("bound name %q: want <provision>[/<local>]:<key>", name)
	}
	head, key := name[:i], name[i+1:]
	provision = head
	if j := strings.IndexByte(head, '/'); j >= 0 {
		provision, local = head[:j], head[j+1:]
		if local == "" {
			return "", "", "", fmt.Errorf("bound name %q: empty local after '/'", name)
		}
	}
	if provision == "" {
		return "", "", "", fmt.Errorf("bound name %q: empty provision", name)
	}
	if key == "" {
		return "", "", "", fmt.Errorf("bound name %q: empty key", name)
	}
	return provision, local, key, nil
}

// Placeholder is one ${kind:name} a template names; it is a need.
type Placeholder struct {
	Kind spec.Kind
	Name string
}

// String gives the placeholder as a template writes it.
func (p Placeholder) String() string { return "${" + string(p.Kind) + ":" + p.Name + "}" }

// TemplateError says what is wrong with a template and where. Line and Col
// are 1-based (Col counts characters); both are 0 when the error concerns
// the whole template (a rendered text over its limit).
type TemplateError struct {
	File      string
	Line, Col int
	Msg       string
	limit     bool
}

func (e *TemplateError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Is makes a limit's error match ErrLimit.
func (e *TemplateError) Is(target error) bool { return e.limit && target == ErrLimit }

// Template is a parsed template. One is kept per archive member for as
// long as a plan names the archive, so it is small: the literal text once
// (placeholders left out, "$${" already "${"), each placeholder's place in
// it as offsets, and the distinct placeholders, whose names are substrings
// of one string. It shares no bytes with the text it was parsed from.
type Template struct {
	Name  string
	lits  string        // the literal text: what renders around the placeholders
	parts []part        // the placeholders' occurrences, in order
	phs   []Placeholder // distinct, in order of first appearance
}

// part is one occurrence of a placeholder: the literal text before it is
// lits[previous part's at:at], idx is its index in phs, and line and col
// (1-based, col in characters) are where its "${" stands in the text.
type part struct {
	at, idx   int32
	line, col int32
}

// knownKinds interns a placeholder's kind: a kind this client fills is
// the spec's constant, not a string of its own in every template.
var knownKinds = func() map[string]spec.Kind {
	m := map[string]spec.Kind{}
	for _, r := range spec.Kinds() {
		m[string(r.Kind)] = r.Kind
	}
	return m
}()

// ParseTemplate parses text, the template called name (its file name in
// the archive, used in errors). See SPEC §4.1: ${kind:name} with kind
// [a-z][a-z0-9-]* and name running to the next '}' on the same line;
// "$${" is a literal "${"; any other '$' is literal.
func ParseTemplate(name string, text []byte) (*Template, error) {
	cur := cursor{text: text, line: 1, col: 1}
	fail := func(off int, limit bool, format string, args ...any) error {
		line, col := cur.at(off)
		return &TemplateError{File: name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), limit: limit}
	}
	if len(text) > math.MaxInt32 {
		// Offsets are int32; an archive (64 MiB) holds no such template.
		return nil, &TemplateError{File: name, limit: true, Msg: fmt.Sprintf("template is over %d bytes", math.MaxInt32)}
	}
	// The literal text, the parts, and the distinct placeholders' names
	// (and kinds this client does not fill) are gathered here and copied,
	// sized exactly, into the template at the end.
	var (
		lits  = make([]byte, 0, len(text))
		parts []part
		names []byte
		phs   []pendingPh
		seen  = map[string]int32{} // a placeholder's body → its index
	)
	i := 0
	for i < len(text) {
		j := bytes.IndexByte(text[i:], '$')
		if j < 0 {
			lits = append(lits, text[i:]...)
			break
		}
		j += i
		lits = append(lits, text[i:j]...)
		switch {
		case j+2 < len(text) && text[j+1] == '$' && text[j+2] == '{':
			lits = append(lits, '$', '{')
			i = j + 3
			continue
		case j+1 >= len(text) || text[j+1] != '{':
			lits = append(lits, '$')
			i = j + 1
			continue
		}
		// A placeholder starts at j.
		b := j + 2
		// The newline is looked for before the '}' only: looked for
		// anywhere after, each of 4,096 placeholders on one long line
		// read the rest of the text (a 64 MiB template: 256 GiB read).
		k := bytes.IndexByte(text[b:], '}')
		if k < 0 || bytes.IndexByte(text[b:b+k], '\n') >= 0 {
			return nil, fail(j, false, `unclosed "${" (no "}" before the end of the line); write "$${" for a literal "${"`)
		}
		body := text[b : b+k]
		colon := bytes.IndexByte(body, ':')
		if colon < 0 {
			return nil, fail(j, false, `placeholder %q has no ":" between kind and name; write "$${" for a literal "${"`, "${"+string(body)+"}")
		}
		kind, pname := body[:colon], body[colon+1:]
		if len(kind) == 0 {
			return nil, fail(j, false, "placeholder %q has an empty kind", "${"+string(body)+"}")
		}
		if !spec.ValidKind(kind) {
			return nil, fail(j, false, "placeholder %q: kind %q is not [a-z][a-z0-9-]*", "${"+string(body)+"}", string(kind))
		}
		if len(pname) == 0 {
			return nil, fail(j, false, "placeholder %q has an empty name", "${"+string(body)+"}")
		}
		if !utf8.Valid(pname) { // names are UTF-8 (SPEC §2.1): these bytes would name nothing
			return nil, fail(j, false, "placeholder %q: its name is not UTF-8 text", "${"+string(body)+"}")
		}
		// No name encodes to more than 3 bytes a byte: a short placeholder
		// is under every limit without building the strings to say so.
		if 3*(len(body)+1) > spec.MaxNameBytes {
			if msg := placeholderTooLong(string(kind), string(pname)); msg != "" {
				return nil, fail(j, true, "%s", msg)
			}
		}
		if len(parts) >= spec.MaxPlaceholders {
			return nil, fail(j, true, "more than %d placeholders in one template (MaxPlaceholders)", spec.MaxPlaceholders)
		}
		idx, ok := seen[string(body)]
		if !ok {
			idx = int32(len(phs))
			seen[string(body)] = idx
			p := pendingPh{kind: knownKinds[string(kind)], kindAt: int32(len(names))}
			if p.kind == "" {
				names = append(names, kind...)
			}
			p.nameAt = int32(len(names))
			names = append(names, pname...)
			p.end = int32(len(names))
			phs = append(phs, p)
		}
		line, col := cur.at(j)
		parts = append(parts, part{at: int32(len(lits)), idx: idx, line: int32(line), col: int32(col)})
		i = b + k + 1
	}
	t := &Template{Name: name, lits: string(lits)}
	if len(parts) > 0 {
		t.parts = make([]part, len(parts))
		copy(t.parts, parts)
		t.phs = make([]Placeholder, len(phs))
		all := string(names) // every name is a substring of it
		for x, p := range phs {
			if p.kind == "" {
				p.kind = spec.Kind(all[p.kindAt:p.nameAt])
			}
			t.phs[x] = Placeholder{Kind: p.kind, Name: all[p.nameAt:p.end]}
		}
	}
	return t, nil
}

// pendingPh is a distinct placeholder while its template is parsed: its
// kind when this client fills it, else the kind at names[kindAt:nameAt];
// its name at names[nameAt:end].
type pendingPh struct {
	kind                spec.Kind
	kindAt, nameAt, end int32
}

// placeholderTooLong says why ${kind:name} is over MaxNameBytes ("" when
// it is not): its kind or name (a key token of its need), or the
// collection it names (a key token of the collect bucket). It quotes the
// name's first bytes only.
func placeholderTooLong(kind, name string) string {
	what := fmt.Sprintf("placeholder ${%s:%.40q…}", kind, name)
	if len(kind) > spec.MaxNameBytes {
		return spec.CheckNameLen(fmt.Sprintf("placeholder kind %.40q…", kind), kind)
	}
	if msg := spec.CheckNameLen(what+": its name", name); msg != "" {
		return msg
	}
	if c := CollectionName(Placeholder{Kind: spec.Kind(kind), Name: name}); c != "" {
		return spec.CheckNameLen(what+": its collection", c)
	}
	return ""
}

// cursor turns byte offsets, asked in increasing order, into line and column.
type cursor struct {
	text      []byte
	off       int
	line, col int
}

func (c *cursor) at(off int) (int, int) {
	if off < c.off {
		c.off, c.line, c.col = 0, 1, 1
	}
	seg := c.text[c.off:off]
	for {
		j := bytes.IndexByte(seg, '\n')
		if j < 0 {
			break
		}
		c.line++
		c.col = 1
		seg = seg[j+1:]
	}
	c.col += utf8.RuneCount(seg)
	c.off = off
	return c.line, c.col
}

// Placeholders are the distinct placeholders of t in order of first appearance.
func (t *Template) Placeholders() []Placeholder {
	out := make([]Placeholder, len(t.phs))
	copy(out, t.phs)
	return out
}

// Pos is the line and column of p's first occurrence in t.
func (t *Template) Pos(p Placeholder) (line, col int, ok bool) {
	for _, pt := range t.parts {
		if t.phs[pt.idx] == p {
			return int(pt.line), int(pt.col), true
		}
	}
	return 0, 0, false
}

// ErrorAt is a TemplateError at p's first occurrence in t (at the whole
// template when t does not name p), for refusing a placeholder where it
// stands, e.g. a ${secret:…} in an item.
func (t *Template) ErrorAt(p Placeholder, msg string) *TemplateError {
	line, col, _ := t.Pos(p)
	return &TemplateError{File: t.Name, Line: line, Col: col, Msg: msg}
}

// CheckKinds refuses a template naming a kind this client does not fill,
// at the first such placeholder.
func CheckKinds(t *Template) error {
	if _, err := firstUnfilled(t); err != nil {
		return err
	}
	return nil
}

// firstUnfilled is t's first placeholder of a kind this client does not
// fill and the error saying so; a nil error when there is none.
func firstUnfilled(t *Template) (Placeholder, *TemplateError) {
	for _, pt := range t.parts {
		if ph := t.phs[pt.idx]; !spec.IsFilled(ph.Kind) {
			return ph, &TemplateError{File: t.Name, Line: int(pt.line), Col: int(pt.col),
				Msg: fmt.Sprintf("placeholder %s: kind %q is not one this client fills", ph, ph.Kind)}
		}
	}
	return Placeholder{}, nil
}

// Render writes t with each placeholder replaced by value(p), verbatim:
// a value is never scanned for placeholders. A result over
// MaxRenderedBytes is refused.
func (t *Template) Render(value func(Placeholder) []byte) ([]byte, error) {
	vals := make([][]byte, len(t.phs))
	for i, ph := range t.phs {
		vals[i] = value(ph)
	}
	return t.render(vals)
}

// render is Render with the value of each of t.phs given by index. The
// result is sized exactly (a rendered file is kept as long as it is filled:
// the slack an appended slice keeps would be held with it).
func (t *Template) render(vals [][]byte) ([]byte, error) {
	return t.renderAdmitted(vals, nil)
}

// admitter says whether a render of size bytes may be held (renderBudget).
type admitter interface{ admit(size int) error }

// renderAdmitted is render, asking a (when not nil) before the bytes are
// made whether they may be.
func (t *Template) renderAdmitted(vals [][]byte, a admitter) ([]byte, error) {
	size := len(t.lits)
	for _, pt := range t.parts {
		size += len(vals[pt.idx])
	}
	if a != nil && size <= spec.MaxRenderedBytes {
		if err := a.admit(size); err != nil {
			return nil, err
		}
	}
	if size > spec.MaxRenderedBytes {
		return nil, &TemplateError{File: t.Name, limit: true,
			Msg: fmt.Sprintf("rendered text is over the limit of %d bytes (16 MiB, MaxRenderedBytes)", spec.MaxRenderedBytes)}
	}
	out := make([]byte, size)
	n, from := 0, int32(0)
	for _, pt := range t.parts {
		n += copy(out[n:], t.lits[from:pt.at])
		n += copy(out[n:], vals[pt.idx])
		from = pt.at
	}
	copy(out[n:], t.lits[from:])
	return out, nil
}
