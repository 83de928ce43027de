package nodes

import (
	"bytes"
	"errors"
	"fmt"
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

// Template is a parsed template: literal chunks and placeholders in order.
type Template struct {
	Name   string
	parts  []part
	phs    []Placeholder // distinct, in order of first appearance
	litLen int
}

type part struct {
	lit       []byte
	ph        Placeholder
	isPh      bool
	idx       int32 // a placeholder's index in phs
	line, col int   // of a placeholder's '$'
}

// ParseTemplate parses text, the template called name (its file name in
// the archive, used in errors). See SPEC §4.1: ${kind:name} with kind
// [a-z][a-z0-9-]* and name running to the next '}' on the same line;
// "$${" is a literal "${"; any other '$' is literal.
func ParseTemplate(name string, text []byte) (*Template, error) {
	t := &Template{Name: name}
	cur := cursor{text: text, line: 1, col: 1}
	seen := map[Placeholder]int32{}
	var lit []byte
	count := 0
	fail := func(off int, limit bool, format string, args ...any) error {
		line, col := cur.at(off)
		return &TemplateError{File: name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), limit: limit}
	}
	i := 0
	for i < len(text) {
		j := bytes.IndexByte(text[i:], '$')
		if j < 0 {
			lit = addLit(lit, text[i:])
			break
		}
		j += i
		lit = addLit(lit, text[i:j])
		switch {
		case j+2 < len(text) && text[j+1] == '$' && text[j+2] == '{':
			lit = append(lit, '$', '{')
			i = j + 3
			continue
		case j+1 >= len(text) || text[j+1] != '{':
			lit = append(lit, '$')
			i = j + 1
			continue
		}
		// A placeholder starts at j.
		b := j + 2
		k := bytes.IndexByte(text[b:], '}')
		nl := bytes.IndexByte(text[b:], '\n')
		if k < 0 || (nl >= 0 && nl < k) {
			return nil, fail(j, false, `unclosed "${" (no "}" before the end of the line); write "$${" for a literal "${"`)
		}
		body := text[b : b+k]
		colon := bytes.IndexByte(body, ':')
		if colon < 0 {
			return nil, fail(j, false, `placeholder %q has no ":" between kind and name; write "$${" for a literal "${"`, "${"+string(body)+"}")
		}
		kind, pname := string(body[:colon]), string(body[colon+1:])
		if kind == "" {
			return nil, fail(j, false, "placeholder %q has an empty kind", "${"+string(body)+"}")
		}
		if !validKind(kind) {
			return nil, fail(j, false, "placeholder %q: kind %q is not [a-z][a-z0-9-]*", "${"+string(body)+"}", kind)
		}
		if pname == "" {
			return nil, fail(j, false, "placeholder %q has an empty name", "${"+string(body)+"}")
		}
		if msg := placeholderTooLong(kind, pname); msg != "" {
			return nil, fail(j, true, "%s", msg)
		}
		count++
		if count > spec.MaxPlaceholders {
			return nil, fail(j, true, "more than %d placeholders in one template (MaxPlaceholders)", spec.MaxPlaceholders)
		}
		if len(lit) > 0 {
			t.parts = append(t.parts, part{lit: lit})
			t.litLen += len(lit)
			lit = nil
		}
		line, col := cur.at(j)
		p := Placeholder{Kind: spec.Kind(kind), Name: pname}
		idx, ok := seen[p]
		if !ok {
			idx = int32(len(t.phs))
			seen[p] = idx
			t.phs = append(t.phs, p)
		}
		t.parts = append(t.parts, part{ph: p, isPh: true, idx: idx, line: line, col: col})
		i = b + k + 1
	}
	if len(lit) > 0 {
		t.parts = append(t.parts, part{lit: lit})
		t.litLen += len(lit)
	}
	return t, nil
}

// addLit adds s to the literal run lit. A run that is one piece of the
// text is that piece, not a copy (the text is kept with the parsed
// template); its capacity is clipped so that adding to it copies.
func addLit(lit, s []byte) []byte {
	if lit == nil {
		return s[:len(s):len(s)]
	}
	return append(lit, s...)
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

func validKind(k string) bool {
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
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
		if pt.isPh && pt.ph == p {
			return pt.line, pt.col, true
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
	for _, pt := range t.parts {
		if pt.isPh && !spec.IsFilled(pt.ph.Kind) {
			return &TemplateError{File: t.Name, Line: pt.line, Col: pt.col,
				Msg: fmt.Sprintf("placeholder %s: kind %q is not one this client fills", pt.ph, pt.ph.Kind)}
		}
	}
	return nil
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
	size := t.litLen
	for _, pt := range t.parts {
		if pt.isPh {
			size += len(vals[pt.idx])
		}
	}
	if size > spec.MaxRenderedBytes {
		return nil, &TemplateError{File: t.Name, limit: true,
			Msg: fmt.Sprintf("rendered text is over the limit of %d bytes (16 MiB, MaxRenderedBytes)", spec.MaxRenderedBytes)}
	}
	out := make([]byte, 0, size)
	for _, pt := range t.parts {
		if pt.isPh {
			out = append(out, vals[pt.idx]...)
		} else {
			out = append(out, pt.lit...)
		}
	}
	return out, nil
}
