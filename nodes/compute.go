package nodes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"unicode/utf8"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The compute functions of the provisioner's nodes. Each reads its inputs by
// position, as the wiring in wire.go lays them out. None puts a value in an
// error: errors become reasons shown in reports and logs.

// computeNeed: [registry entry, source] → the source's bytes.
// The bytes are passed on in the interface value they came in, not boxed
// again (a need per placeholder: a copy of the slice header each is a lot).
func computeNeed(in graph.In) (any, error) {
	switch src := in.Value(1); v := src.(type) {
	case []byte:
		return src, nil
	case string:
		return []byte(v), nil
	}
	return nil, fmt.Errorf("%s: unexpected value type", in.Key(1))
}

// collectedText: [registry entry, collection] → the collection's text:
// every item ordered by contributor, each introduced by "<comment>
// <contributor>" and ending in a newline (an empty item is an empty line).
// No item: the empty text.
func collectedText(comment string) graph.Compute {
	return func(in graph.In) (any, error) {
		items, _ := in.Value(1).(collectionItems)
		size := 0
		for _, it := range items {
			size += len(comment) + 1 + len(it.Contributor) + 1 + len(it.Text)
			if len(it.Text) == 0 || it.Text[len(it.Text)-1] != '\n' {
				size++
			}
		}
		if size > spec.MaxRenderedBytes {
			return nil, fmt.Errorf("the text of collection %s (%d items) is %d bytes, over the limit of %d bytes for a file (16 MiB, MaxRenderedBytes) (%w)", in.Key(1).Name, len(items), size, spec.MaxRenderedBytes, ErrLimit)
		}
		b := make([]byte, 0, size)
		for _, it := range items {
			b = append(b, comment...)
			b = append(b, ' ')
			b = append(b, it.Contributor...)
			b = append(b, '\n')
			b = append(b, it.Text...)
			if len(it.Text) == 0 || it.Text[len(it.Text)-1] != '\n' {
				b = append(b, '\n')
			}
		}
		return b, nil
	}
}

// collectionItems is a collection's value: its recorded items (SPEC §4.4),
// sorted by contributor (byte order).
type collectionItems []ItemText

// Equal is the cutoff: the same contributors with the same texts.
func (c collectionItems) Equal(o any) bool {
	d, ok := o.(collectionItems)
	if !ok || len(c) != len(d) {
		return false
	}
	for i := range c {
		if c[i].Contributor != d[i].Contributor || !bytes.Equal(c[i].Text, d[i].Text) {
			return false
		}
	}
	return true
}

// computeCollection (tolerant): [items…] → the items recorded, by
// contributor. A ready item is its text. An item that waits after having
// been ready is still recorded in mesh-provisioner_collect (the stage keeps
// it there), so it is its text when it was last ready, which kept holds
// (item node → text; NodeGraph.Stabilize keeps it): the collection, and so
// its collectors' files, do not move while it waits. An item that fails
// (deleted from the bucket) or that waits without having been ready since
// it last failed or was made is left out.
// The wiring lays inputs out in contributor order, but an input whose edge
// was once refused (a cycle, later broken) comes back last, so the order
// is checked and restored here.
func computeCollection(kept map[*graph.Node][]byte) graph.Compute {
	return func(in graph.In) (any, error) {
		out := make(collectionItems, 0, in.Len())
		sorted := true
		for i := 0; i < in.Len(); i++ {
			var text []byte
			switch in.State(i) {
			case graph.Ready:
				text, _ = in.Value(i).([]byte)
			case graph.Waiting:
				t, ok := kept[in.Input(i)]
				if !ok {
					continue
				}
				text = t
			default:
				continue
			}
			o := in.Input(i).Meta.(*Origin)
			if n := len(out); n > 0 && out[n-1].Contributor > o.Module {
				sorted = false
			}
			out = append(out, ItemText{Contributor: o.Module, Text: text})
		}
		if !sorted {
			sort.Slice(out, func(i, j int) bool { return out[i].Contributor < out[j].Contributor })
		}
		return out, nil
	}
}

type consumerEntry struct {
	Consumer   string `json:"consumer"`
	Module     string `json:"module"`
	Local      string `json:"local"`
	Credential string `json:"credential"`
	Value      string `json:"value"`
}

// computeConsumersList (tolerant): [bindings, credential of each binding…]
// → the JSON list of consumers whose credential the vault handed; the
// others are left out (the vault leaf says why). The list's first value
// waits for the vault's first answers (computeConsumers).
func computeConsumersList(in graph.In) (any, error) {
	if in.State(0) != graph.Ready {
		return nil, graph.Wait("consumers not read yet")
	}
	bindings, _ := in.Value(0).([]Binding)
	out := make([]consumerEntry, 0, len(bindings))
	for i, b := range bindings {
		if i+1 >= in.Len() || in.State(i+1) != graph.Ready {
			continue
		}
		v := in.Value(i + 1).([]byte)
		if !ListableCredential(v) {
			continue // left out, as one the vault does not hold (the daemon logs it)
		}
		out = append(out, consumerEntry{Consumer: b.Consumer, Module: b.Module, Local: b.Local,
			Credential: b.Credential, Value: string(v)})
	}
	return json.Marshal(out) // one line: a template may put it in a line-based file (an env file, managed-keys)
}

// RenderCounts counts the templates a NodeGraph rendered (each run of a file's
// or an item's compute that got as far as rendering), for metrics and for
// tests that hold fan-out to what depends on a change.
type RenderCounts struct {
	Files atomic.Uint64
	Items atomic.Uint64
	// Again counts files rendered again for their bytes (FileValue.Bytes):
	// not a compute, so not in Files.
	Again atomic.Uint64
}

// renderer renders one template from the need nodes of its placeholders.
// It keeps nothing per placeholder (there is one per file): the template
// holds the placeholders, and a need's key is checked against module and
// placeholder without being built.
type renderer struct {
	t      *Template
	module string
	skip   int // inputs before the needs (plan, archive)
}

func newRenderer(module string, t *Template, skip int) *renderer {
	return &renderer{t: t, module: module, skip: skip}
}

// isNeedKey says whether k is needKey(module, ph), without building it.
func isNeedKey(k graph.Key, module string, ph Placeholder) bool {
	n := k.Name
	if k.Kind != KindNeed || len(n) != len(module)+len(ph.Kind)+len(ph.Name)+5 {
		return false
	}
	i := len(module)
	j := i + 3 + len(ph.Kind)
	return n[:i] == module && n[i:i+3] == "/${" && n[i+3:j] == string(ph.Kind) &&
		n[j] == ':' && n[j+1:len(n)-1] == ph.Name && n[len(n)-1] == '}'
}

// render reads each placeholder's value from its need node. The needs are
// laid out in placeholder order; an input whose edge was refused once (a
// cycle, later broken) comes back last, so a need not in its place is
// looked for by key: a value never lands in another placeholder.
func (r *renderer) render(in graph.In) ([]byte, error) { return r.renderAdmitted(in, nil) }

// renderAdmitted is render, asking a (when not nil) whether its bytes may
// be held before they are made.
func (r *renderer) renderAdmitted(in graph.In, a admitter) ([]byte, error) {
	phs := r.t.phs
	// The values' slices on the stack when there are few (the refill
	// renders every file again: issue 20).
	var few [16][]byte
	var vals [][]byte
	if len(phs) <= len(few) {
		vals = few[:len(phs)]
	} else {
		vals = make([][]byte, len(phs))
	}
	for j := range phs {
		v, err := r.value(in, j)
		if err != nil {
			return nil, err
		}
		vals[j] = v
	}
	return r.t.renderAdmitted(vals, a)
}

// value is the value of the template's j-th placeholder.
func (r *renderer) value(in graph.In, j int) ([]byte, error) {
	ph := r.t.phs[j]
	i := r.skip + j
	if i >= in.Len() || !isNeedKey(in.Key(i), r.module, ph) {
		i = -1
		for x := r.skip; x < in.Len(); x++ {
			if isNeedKey(in.Key(x), r.module, ph) {
				i = x
				break
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("template %s: %s is not wired (a refused cycle edge)", r.t.Name, ph)
		}
	}
	v, _ := in.Value(i).([]byte)
	return v, nil
}

// brokenKeysLine is the first placeholder whose value holds a line break,
// in a managed-keys file; secret says whether it is a secret's. Each line
// of such a value would be read as a line of its own: a key the template
// does not write, set by whoever writes the value (mesh-config, a
// provider, the controller's placement) in a file the module may share
// with the operator; and a secret's lines would reach the node-engine,
// which keeps and names keys (its state, its conflicts). A collection's
// text is lines by nature (each contributor's keys) and may hold them.
func (r *renderer) brokenKeysLine(in graph.In) (ph Placeholder, secret, ok bool) {
	for j, ph := range r.t.phs {
		if spec.IsCollectionKind(ph.Kind) {
			continue
		}
		if v, err := r.value(in, j); err == nil && bytes.ContainsAny(v, "\r\n") {
			return ph, spec.IsSecretKind(ph.Kind), true
		}
	}
	return Placeholder{}, false, false
}

// fileNode is a templated file's node's own data: its Meta, and what its
// compute (render) reads. One allocation a file: a spec, an Origin, a
// renderer and a closure apiece were ~340 bytes a file (issue 20).
type fileNode struct {
	spec   FileSpec // mode already defaulted; the file's values point at it
	r      renderer
	secret bool
	counts *RenderCounts
	// budget is the module's (budget.go); size is the bytes of this
	// file's last value, want what it was refused for (0: not refused).
	budget             *renderBudget
	size, want, wanted int32 // wanted: the size the last render asked admit for (each at most 16 MiB)
}

// admit asks the module's budget whether this file may hold size bytes.
func (f *fileNode) admit(size int) error {
	f.wanted = int32(size)
	return f.budget.admit(f, size)
}

func newFileNode(counts *RenderCounts, module string, spec FileSpec, t *Template, skip int, secret bool) *fileNode {
	return &fileNode{spec: spec, r: renderer{t: t, module: module, skip: skip}, secret: secret, counts: counts}
}

// render: [plan, archive, needs…] → the file rendered from its template,
// within the module's budget (budget.go).
func (f *fileNode) render(in graph.In) (any, error) {
	f.wanted = 0
	v, err := f.renderValue(in)
	if err != nil {
		_, refused := errors.AsType[*overBudgetError](err)
		f.budget.took(f, 0, int(f.wanted), refused)
		return nil, err
	}
	f.budget.took(f, int(v.size), 0, false)
	return v, nil
}

func (f *fileNode) renderValue(in graph.In) (*FileValue, error) {
	f.counts.Files.Add(1)
	if f.spec.Form == FormManagedKeys {
		switch ph, secret, ok := f.r.brokenKeysLine(in); {
		case ok && secret:
			return nil, fmt.Errorf("template %s: the value of %s holds a line break, which a managed-keys file would read as lines of their own (the value is not shown: it is a secret); write it to an owned file", f.r.t.Name, ph)
		case ok:
			return nil, fmt.Errorf("template %s: the value of %s holds a line break, which a managed-keys file would read as lines of their own, setting keys the template does not write; a managed-keys file sets only its template's keys", f.r.t.Name, ph)
		}
	}
	content, err := f.r.renderAdmitted(in, f)
	if err != nil {
		return nil, err
	}
	if f.secret && f.spec.Form == FormManagedKeys {
		if ph, ok := f.r.keyedSecret(in, content); ok {
			return nil, fmt.Errorf("template %s: the value of %s stands where a line's key is (before its first \"=\"), which a managed-keys file's node-engine keeps and names (the value is not shown: it is a secret); put it after the \"=\"", f.r.t.Name, ph)
		}
	}
	return &FileValue{Spec: &f.spec, Secret: f.secret, size: int32(len(content)),
		sum: sha256.Sum256(content), held: content, node: in.Node()}, nil
}

// renderItem: [plan, archive, needs…] → the item's text for collection.
// An item whose record the bus cannot hold fails (itemrecord.go).
func renderItem(counts *RenderCounts, module, collection string, t *Template, skip int, room func() int64) graph.Compute {
	r := newRenderer(module, t, skip)
	return func(in graph.In) (any, error) {
		counts.Items.Add(1)
		text, err := r.render(in)
		if err != nil {
			return nil, err
		}
		if len(text) > spec.MaxItemBytes {
			return nil, fmt.Errorf("the item for collection %s (template %s) is %d bytes, over the limit of %d bytes (512 KiB: an item is kept in a bucket) (%w)",
				collection, t.Name, len(text), spec.MaxItemBytes, ErrLimit)
		}
		if err := r.validItem(in, collection, text); err != nil {
			return nil, err
		}
		if err := itemRecordFits(room(), module, collection, t.Name, text); err != nil {
			return nil, err
		}
		return text, nil
	}
}

// ListableCredential says whether a consumers list can carry credential
// value v: a JSON string cannot carry bytes that are not UTF-8 (encoded,
// they turn into U+FFFD and the provider would hold a credential that is
// not the consumer's), so such a consumer is left out.
func ListableCredential(v []byte) bool { return utf8.Valid(v) }

// secretContent: [plan, need secret] → a file holding the secret alone.
// It is a file like a rendered one, bounded as one (SPEC §4.1: 16 MiB);
// the refusal says the length, never the value.
func secretContent(fs FileSpec) graph.Compute {
	sp := &fs
	return func(in graph.In) (any, error) {
		v, _ := in.Value(1).([]byte)
		if len(v) > spec.MaxRenderedBytes {
			return nil, fmt.Errorf("the secret written to %s is %d bytes, over the limit of %d bytes for a file (16 MiB, MaxRenderedBytes) (%w)",
				sp.Path, len(v), spec.MaxRenderedBytes, ErrLimit)
		}
		return NewFileValue(sp, v, true), nil
	}
}

// computeNothing is a file whose templates are not here yet; it never runs
// while the archive input waits.
func computeNothing(graph.In) (any, error) {
	return nil, graph.Wait("templates not parsed yet")
}

// computeModule: [plan, archive?, files…, items…] → how many there are.
// Only its state matters (ready once every file and item is): a file that
// changes says so itself, so the module need not hash its files' bytes on
// every change (that made one change cost O(files of the module)).
func computeModule(in graph.In) (any, error) {
	return in.Len(), nil
}

// planFingerprint hashes a plan, so a changed plan makes its files
// recompute even when its templates digest stays.
func planFingerprint(a *Assignment) string {
	b, _ := json.Marshal(a)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}
