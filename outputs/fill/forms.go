package fill

import (
	"bytes"
	"strings"
)

// content works out the bytes a file should hold after its form is applied
// to base (what is on disk, t.current, less what an earlier form of the
// module wrote: withoutOldForm) and the action that says so. For owned
// files the action is settled later (written or unchanged) together with
// mode and owner.
func content(f File, module string, t target, base []byte) (want []byte, action string, err error) {
	want, action, err = formContent(f, module, t, base)
	if err == nil && (f.Form == FormManagedKeys || f.Form == FormManagedBlock) && int64(len(want)) > maxRead {
		// read whole to merge into at every fill (dirs.take), a file past
		// maxRead is refused to every module's keys and blocks, its own
		// block's removal too: it is not made so
		return nil, "", refuse("path %q: merged, the file would be %d bytes; mesh-fill reads at most %d bytes of a file it merges into, "+
			"and would merge into it no more; make the content shorter, or the file owned", f.Path, len(want), maxRead)
	}
	return want, action, err
}

// formContent is content before its size is checked.
func formContent(f File, module string, t target, base []byte) (want []byte, action string, err error) {
	switch f.Form {
	case FormOwned:
		return f.Content, "", nil
	case FormSeed:
		if !t.exists() {
			return f.Content, ActionWritten, nil
		}
		if bytes.Equal(base, t.current) {
			return t.current, ActionKept, nil
		}
		if err := mergeable(t, f.Form); err != nil {
			return nil, "", err
		}
		return base, ActionMerged, nil // kept, less the module's old block
	case FormManagedKeys:
		pairs, err := parseKeys(f)
		if err != nil {
			return nil, "", err
		}
		if !t.exists() {
			return mergeKeys(nil, pairs), ActionWritten, nil
		}
		if err := mergeable(t, f.Form); err != nil {
			return nil, "", err
		}
		return changed(t.current, mergeKeys(base, pairs))
	case FormManagedBlock:
		if err := checkBlock(f); err != nil {
			return nil, "", err
		}
		if !t.exists() {
			return block(module, f.Content, lineEnding(f.Content)), ActionWritten, nil
		}
		if err := mergeable(t, f.Form); err != nil {
			return nil, "", err
		}
		merged, err := replaceBlock(f.Path, module, base, f.Content)
		if err != nil {
			return nil, "", err
		}
		return changed(t.current, merged)
	default:
		return nil, "", refuse("path %q: form %q is not one of owned, seed, managed-keys, managed-block", f.Path, f.Form)
	}
}

// oneName refuses to carry the text of t, an existing file, into the
// file written in its place when the file has another name (a hard link):
// the text is written whole to a temp file renamed over the path (never
// edited in place), with the request's mode and owner. One who may write
// the directory could link there a file they may not read (/etc/shadow,
// where fs.protected_hardlinks is off), and read its text in the new file;
// and a file of two names would be split anyway, its other name left with
// the old text. An owned file's text is not carried over: its rename
// replaces the one name, and is not refused.
func oneName(t target) error {
	if n := links(t.info); n > 1 {
		return refuse("path %q is a file of %d names (hard links): mesh-fill merges only into a file of one name; "+
			"make it a file of its own", t.path, n)
	}
	return nil
}

// mergeable refuses to merge into t, an existing file, when it has
// another name (oneName) or is not text: a file holding a NUL byte (a
// database, an image, a compiled policy) has no lines to set keys or a
// block in, and merging into it would corrupt it for whatever reads it.
func mergeable(t target, form string) error {
	if err := oneName(t); err != nil {
		return err
	}
	if i := bytes.IndexByte(t.current, 0); i >= 0 {
		return refuse("path %q is a binary file (a NUL byte at offset %d): mesh-fill merges %s only into a text file, "+
			"and leaves this one as it is; name another path, or make the file owned", t.path, i, form)
	}
	return nil
}

// checkText refuses managed-keys or managed-block content holding a NUL
// byte: written, it made the file one mergeable refuses, so every module's
// keys and blocks there, the writer's corrected content too, were refused
// from then on (and a managed-keys file is left as it is when its module
// goes: nothing could mend it). The error names the line, never its text
// (it may hold a secret). Owned and seed files may be binary.
func checkText(f File) error {
	if f.Form != FormManagedKeys && f.Form != FormManagedBlock {
		return nil
	}
	if i := bytes.IndexByte(f.Content, 0); i >= 0 {
		line := bytes.Count(f.Content[:i], []byte("\n")) + 1
		return refuse("path %q: line %d of its %s content holds a NUL byte: mesh-fill merges only text, "+
			"and would merge into the file no more; send a binary file owned", f.Path, line, f.Form)
	}
	return nil
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

// keyNames are the keys a managed-keys file's content sets (content
// already checked by parseKeys).
func keyNames(f File) []string {
	pairs, _ := parseKeys(f)
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i] = p.key
	}
	return keys
}

// mergeKeys sets the given keys in current: each line setting one of them is
// replaced, every other line is kept in its place, and keys not found are
// appended in the content's order. A line replaced keeps its line ending
// (\r\n or \n); a line appended takes the file's first line's.
func mergeKeys(current []byte, pairs []keyLine) []byte {
	byKey := make(map[string]string, len(pairs))
	for _, p := range pairs {
		byKey[p.key] = p.line
	}
	found := map[string]bool{}
	var b strings.Builder
	lines := strings.SplitAfter(string(current), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		// a module's managed block is that module's: a key set inside it
		// is not ours to replace (its next fill would put it back, and
		// each would restart the other's program at every refill)
		if end := blockEnd(lines, i); end > i {
			for _, bl := range lines[i : end+1] {
				b.WriteString(bl)
			}
			i = end
			continue
		}
		body, nl := strings.CutSuffix(l, "\n")
		body, cr := strings.CutSuffix(body, "\r")
		if k, ok := lineKey(body); ok {
			if repl, want := byKey[k]; want {
				found[k] = true
				b.WriteString(repl)
				if cr {
					b.WriteByte('\r')
				}
				if nl {
					b.WriteByte('\n')
				}
				continue
			}
		}
		b.WriteString(l)
	}
	eol := lineEnding(current)
	for _, p := range pairs {
		if found[p.key] {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString(eol)
		}
		b.WriteString(p.line)
		b.WriteString(eol)
	}
	return []byte(b.String())
}

// The marker lines' beginnings, the same for every module's block.
const (
	beginMarker = "# BEGIN mesh "
	endMarker   = "# END mesh "
)

// checkBlock refuses managed-block content holding a line that is a block
// marker of any module: another module's block would end there when that
// module's next fill looked for its markers. The error names the line's
// number, never its text (it may hold a secret).
func checkBlock(f File) error {
	for i, l := range strings.Split(string(f.Content), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, beginMarker) || strings.HasPrefix(t, endMarker) {
			return refuse("path %q: line %d of its managed-block content is a block marker (\"%s<module>\" or \"%s<module>\"), which no block may hold",
				f.Path, i+1, beginMarker, endMarker)
		}
	}
	return nil
}

func markers(module string) (begin, end string) {
	return "# BEGIN mesh " + module, "# END mesh " + module
}

// lineEnding is text's line ending: "\r\n" when its first line ends so,
// "\n" otherwise.
func lineEnding(text []byte) string {
	if first, _, ok := bytes.Cut(text, []byte("\n")); ok && bytes.HasSuffix(first, []byte("\r")) {
		return "\r\n"
	}
	return "\n"
}

// block is the managed block with its markers, each line ending in eol:
// in a file of CRLF lines the block's lines end so too (content's lines
// ending in a bare \n are given a \r), markers and all.
func block(module string, content []byte, eol string) []byte {
	begin, end := markers(module)
	var b bytes.Buffer
	b.WriteString(begin + eol)
	if eol == "\r\n" {
		for line := range bytes.Lines(content) {
			if body, ok := bytes.CutSuffix(line, []byte("\n")); ok && !bytes.HasSuffix(body, []byte("\r")) {
				line = append(body[:len(body):len(body)], '\r', '\n')
			}
			b.Write(line)
		}
	} else {
		b.Write(content)
	}
	if len(content) > 0 && content[len(content)-1] != '\n' {
		b.WriteString(eol)
	}
	b.WriteString(end + eol)
	return b.Bytes()
}

// replaceBlock puts the module's block into current: between its markers
// when they are there, appended otherwise. Text around the block is kept,
// and the block takes current's line ending (lineEnding).
func replaceBlock(p, module string, current, content []byte) ([]byte, error) {
	lines, bi, ei, err := findBlock(p, module, current)
	if err != nil {
		return nil, err
	}
	eol := lineEnding(current)
	blk := string(block(module, content, eol))
	var b strings.Builder
	if bi < 0 {
		b.Write(current)
		if len(current) > 0 && current[len(current)-1] != '\n' {
			b.WriteString(eol)
		}
		b.WriteString(blk)
		return []byte(b.String()), nil
	}
	return spliceBlock(lines, bi, ei, blk), nil
}

// removeBlock takes the module's block, markers and all, out of current;
// ok is false when there is none.
func removeBlock(p, module string, current []byte) (out []byte, ok bool, err error) {
	lines, bi, ei, err := findBlock(p, module, current)
	if err != nil || bi < 0 {
		return current, false, err
	}
	return spliceBlock(lines, bi, ei, ""), true, nil
}

// findBlock splits current into lines (each with its newline) and finds
// the module's begin and end marker lines; -1s when there is no block.
func findBlock(p, module string, current []byte) (lines []string, bi, ei int, err error) {
	begin, end := markers(module)
	lines = strings.SplitAfter(string(current), "\n")
	bi, ei = -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if bi < 0 && t == begin {
			bi = i
		} else if bi >= 0 && t == end {
			ei = i
			break
		} else if bi < 0 && t == end {
			return nil, 0, 0, refuse("path %q holds %q before any %q", p, end, begin)
		}
	}
	if bi >= 0 && ei < 0 {
		return nil, 0, 0, refuse("path %q holds %q without %q", p, begin, end)
	}
	// A second block of the module (copied by hand): the first alone
	// would be written, the second left stale and still read by the
	// program. Refused like broken markers, saying where.
	for i := ei + 1; bi >= 0 && i < len(lines); i++ {
		if t := strings.TrimSpace(lines[i]); t == begin || t == end {
			return nil, 0, 0, refuse("path %q holds the block of module %s twice (%q again at line %d, after the block at lines %d-%d): one must go, by hand", p, module, t, i+1, bi+1, ei+1)
		}
	}
	return lines, bi, ei, nil
}

// spliceBlock is lines with lines[bi..ei] replaced by blk.
func spliceBlock(lines []string, bi, ei int, blk string) []byte {
	var b strings.Builder
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
	return []byte(b.String())
}

// blockEnd is the index of the end marker of the managed block whose
// begin marker is lines[i], or -1 when lines[i] begins none that ends.
func blockEnd(lines []string, i int) int {
	t := strings.TrimSpace(lines[i])
	module, ok := strings.CutPrefix(t, beginMarker)
	if !ok || module == "" {
		return -1
	}
	_, end := markers(module)
	for j := i + 1; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) == end {
			return j
		}
	}
	return -1
}
