package fill

import (
	"bytes"
	"strings"
)

// content works out the bytes a file should hold after its form is applied
// and the action that says so. For owned files the action is settled later
// (written or unchanged) together with mode and owner.
func content(f File, module string, t target) (want []byte, action string, err error) {
	switch f.Form {
	case FormOwned:
		return f.Content, "", nil
	case FormSeed:
		if t.exists() {
			return t.current, ActionKept, nil
		}
		return f.Content, ActionWritten, nil
	case FormManagedKeys:
		pairs, err := parseKeys(f)
		if err != nil {
			return nil, "", err
		}
		if !t.exists() {
			return mergeKeys(nil, pairs), ActionWritten, nil
		}
		return changed(t.current, mergeKeys(t.current, pairs))
	case FormManagedBlock:
		if !t.exists() {
			return block(module, f.Content), ActionWritten, nil
		}
		merged, err := replaceBlock(f.Path, module, t.current, f.Content)
		if err != nil {
			return nil, "", err
		}
		return changed(t.current, merged)
	default:
		return nil, "", refuse("path %q: form %q is not one of owned, seed, managed-keys, managed-block", f.Path, f.Form)
	}
}

func changed(current, merged []byte) ([]byte, string, error) {
	if bytes.Equal(current, merged) {
		return current, ActionUnchanged, nil
	}
	return merged, ActionMerged, nil
}

// keyLine is one key=value line of a managed-keys file's content.
type keyLine struct{ key, line string }

// lineKey is the key a line sets, if it sets one: text before the first `=`,
// trimmed; blank lines and lines starting with # or ; set none.
func lineKey(s string) (string, bool) {
	t := strings.TrimLeft(s, " \t")
	if t == "" || t[0] == '#' || t[0] == ';' {
		return "", false
	}
	i := strings.IndexByte(t, '=')
	if i < 0 {
		return "", false
	}
	k := strings.TrimSpace(t[:i])
	return k, k != ""
}

// parseKeys reads the content of a managed-keys file. Errors name line
// numbers only: a value may be a secret.
func parseKeys(f File) ([]keyLine, error) {
	var out []keyLine
	seen := map[string]int{}
	for i, l := range strings.Split(string(f.Content), "\n") {
		l = strings.TrimSuffix(l, "\r")
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		k, ok := lineKey(l)
		if !ok {
			return nil, refuse("path %q: line %d of its managed-keys content is not key=value", f.Path, i+1)
		}
		if j, dup := seen[k]; dup {
			return nil, refuse("path %q: lines %d and %d of its managed-keys content set the same key", f.Path, j, i+1)
		}
		seen[k] = i + 1
		out = append(out, keyLine{key: k, line: l})
	}
	return out, nil
}

// mergeKeys sets the given keys in current: each line setting one of them is
// replaced, every other line is kept in its place, and keys not found are
// appended in the content's order.
func mergeKeys(current []byte, pairs []keyLine) []byte {
	byKey := make(map[string]string, len(pairs))
	for _, p := range pairs {
		byKey[p.key] = p.line
	}
	found := map[string]bool{}
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(current), "\n") {
		if l == "" {
			continue
		}
		body, nl := strings.CutSuffix(l, "\n")
		if k, ok := lineKey(body); ok {
			if repl, want := byKey[k]; want {
				found[k] = true
				b.WriteString(repl)
				if nl {
					b.WriteByte('\n')
				}
				continue
			}
		}
		b.WriteString(l)
	}
	for _, p := range pairs {
		if found[p.key] {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(p.line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func markers(module string) (begin, end string) {
	return "# BEGIN mesh " + module, "# END mesh " + module
}

// block is the managed block with its markers, ending in a newline.
func block(module string, content []byte) []byte {
	begin, end := markers(module)
	var b bytes.Buffer
	b.WriteString(begin + "\n")
	b.Write(content)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(end + "\n")
	return b.Bytes()
}

// replaceBlock puts the module's block into current: between its markers
// when they are there, appended otherwise. Text around the block is kept.
func replaceBlock(p, module string, current, content []byte) ([]byte, error) {
	begin, end := markers(module)
	for _, l := range strings.Split(string(content), "\n") {
		if t := strings.TrimSpace(l); t == begin || t == end {
			return nil, refuse("path %q: the managed-block content holds the block's own markers", p)
		}
	}
	lines := strings.SplitAfter(string(current), "\n")
	bi, ei := -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if bi < 0 && t == begin {
			bi = i
		} else if bi >= 0 && t == end {
			ei = i
			break
		} else if bi < 0 && t == end {
			return nil, refuse("path %q holds %q before any %q", p, end, begin)
		}
	}
	blk := string(block(module, content))
	if bi >= 0 && ei < 0 {
		return nil, refuse("path %q holds %q without %q", p, begin, end)
	}
	var b strings.Builder
	if bi < 0 {
		b.Write(current)
		if len(current) > 0 && current[len(current)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString(blk)
		return []byte(b.String()), nil
	}
	for _, l := range lines[:bi] {
		b.WriteString(l)
	}
	b.WriteString(blk)
	after := lines[ei+1:]
	if !strings.HasSuffix(lines[ei], "\n") {
		// the end marker was the file's last, unterminated line
		after = nil
	}
	for _, l := range after {
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}
