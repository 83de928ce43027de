package nodes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/novox/mesh-provisioner/graph"
)

// The compute functions of the provisioner's nodes. Each reads its inputs by
// position, as the wiring in wire.go lays them out. None puts a value in an
// error: errors become reasons shown in reports and logs.

// computeNeed: [registry entry, source] → the source's bytes.
func computeNeed(in graph.In) (any, error) {
	switch v := in.Value(1).(type) {
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	}
	return nil, fmt.Errorf("%s: unexpected value type", in.Key(1))
}

// boundValue: [registry entry, bound entry values] → values[k].
func boundValue(k string) graph.Compute {
	return func(in graph.In) (any, error) {
		vals, _ := in.Value(1).(map[string]string)
		v, ok := vals[k]
		if !ok {
			o, _ := in.Input(1).Meta.(*Origin)
			where := in.Key(1).Name
			if o != nil {
				where = o.Bucket + " " + o.Key
			}
			return nil, graph.Wait("%s: bound, but has no value %q yet", where, k)
		}
		return []byte(v), nil
	}
}

// collectedText: [registry entry, collection] → the collection's text:
// every item ordered by contributor, each introduced by "<comment>
// <contributor>" and ending in a newline.
func collectedText(comment string) graph.Compute {
	return func(in graph.In) (any, error) {
		items, _ := in.Value(1).([]ItemText)
		var b bytes.Buffer
		for _, it := range items {
			b.WriteString(comment)
			b.WriteByte(' ')
			b.WriteString(it.Contributor)
			b.WriteByte('\n')
			b.Write(it.Text)
			if len(it.Text) > 0 && it.Text[len(it.Text)-1] != '\n' {
				b.WriteByte('\n')
			}
		}
		if b.Len() > MaxRenderedBytes {
			return nil, fmt.Errorf("collection text is over the limit of %d bytes", MaxRenderedBytes)
		}
		return b.Bytes(), nil
	}
}

// computeCollection (tolerant): [items…] → the ready items, by contributor
// (inputs are laid out in contributor order). An item that waits or fails is
// not recorded, so it is left out.
func computeCollection(in graph.In) (any, error) {
	out := make([]ItemText, 0, in.Len())
	for i := 0; i < in.Len(); i++ {
		if in.State(i) != graph.Ready {
			continue
		}
		o := in.Input(i).Meta.(*Origin)
		out = append(out, ItemText{Contributor: o.Module, Text: in.Value(i).([]byte)})
	}
	return out, nil
}

type consumerEntry struct {
	Consumer   string `json:"consumer"`
	Module     string `json:"module"`
	Local      string `json:"local"`
	Credential string `json:"credential"`
	Value      string `json:"value"`
}

// computeConsumers (tolerant): [bindings, credential of each binding…] → the
// JSON list of consumers whose credential the vault handed; the others are
// left out (the vault leaf says why).
func computeConsumers(in graph.In) (any, error) {
	if in.State(0) != graph.Ready {
		return nil, graph.Wait("consumers not read yet")
	}
	bindings, _ := in.Value(0).([]Binding)
	out := make([]consumerEntry, 0, len(bindings))
	for i, b := range bindings {
		if i+1 >= in.Len() || in.State(i+1) != graph.Ready {
			continue
		}
		out = append(out, consumerEntry{Consumer: b.Consumer, Module: b.Module, Local: b.Local,
			Credential: b.Credential, Value: string(in.Value(i + 1).([]byte))})
	}
	return json.MarshalIndent(out, "", "  ")
}

// renderFile: [plan, archive, needs…] → the file rendered from t.
func renderFile(module string, spec FileSpec, t *Template, skip int, secret bool) graph.Compute {
	return func(in graph.In) (any, error) {
		content, err := renderTemplate(t, in, skip)
		if err != nil {
			return nil, err
		}
		return &FileValue{Module: module, Spec: spec, Content: content, Secret: secret}, nil
	}
}

// renderItem: [plan, archive, needs…] → the item's text.
func renderItem(t *Template, skip int) graph.Compute {
	return func(in graph.In) (any, error) {
		text, err := renderTemplate(t, in, skip)
		if err != nil {
			return nil, err
		}
		if len(text) > MaxItemBytes {
			return nil, fmt.Errorf("item %s is %d bytes, over the limit of %d bytes (%w)", t.Name, len(text), MaxItemBytes, ErrLimit)
		}
		return text, nil
	}
}

func renderTemplate(t *Template, in graph.In, skip int) ([]byte, error) {
	phs := t.Placeholders()
	idx := make(map[Placeholder]int, len(phs))
	for i, ph := range phs {
		idx[ph] = skip + i
	}
	return t.Render(func(ph Placeholder) []byte {
		v, _ := in.Value(idx[ph]).([]byte)
		return v
	})
}

// secretContent: [plan, need secret] → a file holding the secret alone.
func secretContent(module string, spec FileSpec) graph.Compute {
	return func(in graph.In) (any, error) {
		v, _ := in.Value(1).([]byte)
		return &FileValue{Module: module, Spec: spec, Content: v, Secret: true}, nil
	}
}

// computeNothing is a file whose templates are not here yet; it never runs
// while the archive input waits.
func computeNothing(graph.In) (any, error) {
	return nil, graph.Wait("templates not parsed yet")
}

// computeModule: [plan, archive?, files…, items…] → a digest of every file
// and item, so the module changes when one of them does.
func computeModule(in graph.In) (any, error) {
	h := sha256.New()
	for i := 0; i < in.Len(); i++ {
		switch v := in.Value(i).(type) {
		case *FileValue:
			h.Write([]byte(v.Spec.Path))
			h.Write([]byte(v.Digest()))
		case []byte:
			s := sha256.Sum256(v)
			h.Write(s[:])
		case string:
			h.Write([]byte(v))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// planFingerprint hashes a plan, so a changed plan makes its files
// recompute even when its templates digest stays.
func planFingerprint(a *Assignment) string {
	b, _ := json.Marshal(a)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}
