package scale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func small(t *testing.T) *Mesh {
	t.Helper()
	m, err := Generate(Config{Nodes: 2, Modules: 6, Files: 10, Placeholders: 10, Contributors: 3, Consumers: 4})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTheMixIsExact(t *testing.T) {
	m := small(t)
	got := m.Mix()
	total := m.Config.Modules * m.Config.Files * m.Config.Placeholders // 600
	want := map[string]int{"config": total * 60 / 100, "placement": total * 20 / 100,
		"secret": total * 5 / 100, "bound": total * 5 / 100, "collected": total * 5 / 100, "consumers": total * 5 / 100}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d slots, want %d (mix %v)", k, got[k], n, got)
		}
	}
}

func TestEveryAssignmentParsesAndItsArchiveMatches(t *testing.T) {
	m := small(t)
	if len(m.Assignments) != 12 {
		t.Fatalf("%d assignments, want 12", len(m.Assignments))
	}
	for _, a := range m.Assignments {
		b, _ := json.Marshal(a)
		if _, err := nodes.ParseAssignment(spec.EncodeKey(a.Node, a.Module), b); err != nil {
			t.Fatalf("%s: %v", a.Module, err)
		}
		name := archiveName(t, m, a.Provisioning.Templates.Ref)
		_, digest, _ := TarGz(m.Templates[name])
		if digest != a.Provisioning.Templates.Digest {
			t.Fatalf("%s: digest %s, archive %s", a.Module, a.Provisioning.Templates.Digest, digest)
		}
	}
}

func archiveName(t *testing.T, m *Mesh, ref string) string {
	for name := range m.Archives {
		if ref == m.Config.ArchiveRef(name) {
			return name
		}
	}
	t.Fatalf("no archive for ref %s", ref)
	return ""
}

// TestTheRealGraphRendersWhatTheRendererRenders feeds the generated mesh
// to the client's own graph (nodes.NodeGraph) and checks every file is filled
// with the bytes the full re-render gives, and that a provider lists
// exactly K consumers.
func TestTheRealGraphRendersWhatTheRendererRenders(t *testing.T) {
	m := small(t)
	g := load(t, m, 0)
	r := m.Renderer(0)
	for i := 0; i < m.Config.Modules; i++ {
		v := g.View(ModuleName(0, i))
		if v.State != graph.Ready {
			t.Fatalf("module %d: %v %s", i, v.State, v.Reason)
		}
		for f, fv := range v.Files {
			want, err := r.Render(i, f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytesOf(t, fv.Value), want) {
				t.Fatalf("%s:\n%s\nrenderer:\n%s", fv.Path, bytesOf(t, fv.Value), want)
			}
		}
	}
	var list []map[string]string
	if err := json.Unmarshal(r.cons[ModuleName(0, 0)], &list); err != nil || len(list) != m.Config.Consumers {
		t.Fatalf("provider lists %d consumers (%v), want %d", len(list), err, m.Config.Consumers)
	}
}

// TestDependentsAreExactlyTheFilesThatChange: a changed config value
// changes exactly the files Dependents names, in the real graph.
func TestDependentsAreExactlyTheFilesThatChange(t *testing.T) {
	m := small(t)
	g := load(t, m, 0)
	before := contents(g, m)
	for v, c := range []struct {
		i   int
		key string
	}{{1, "common-3"}, {4, "f6-5"}, {2, ItemKey}} {
		if c.key != ItemKey && len(m.Dependents(0, c.i, c.key)) == 0 {
			t.Fatalf("key %s is named by no file", c.key)
		}
		k := spec.EncodeKey(NodeName(0), ModuleName(0, c.i), c.key)
		g.Put(spec.ConfigBucket, k, []byte(ConfigValue(ModuleName(0, c.i), c.key, v+1)))
		g.Stabilize()
		after := contents(g, m)
		var changed []string
		for p, b := range after {
			if !bytes.Equal(before[p], b) {
				changed = append(changed, p)
			}
		}
		want := m.Dependents(0, c.i, c.key)
		if fmt.Sprint(sorted(changed)) != fmt.Sprint(want) {
			t.Fatalf("%s: changed %v, dependents %v", c.key, sorted(changed), want)
		}
		before = after
	}
}

func load(t *testing.T, m *Mesh, n int) *nodes.NodeGraph {
	t.Helper()
	g := nodes.NewNodeGraph(NodeName(n))
	for _, r := range spec.Kinds() {
		g.Put(spec.RegistryBucket, string(r.Kind), []byte(`{"kind":"`+string(r.Kind)+`"}`))
	}
	for k, v := range m.ConfigValues {
		g.Put(spec.ConfigBucket, k, v)
	}
	for b, keys := range m.Bound {
		for k, v := range keys {
			g.Put(b, k, v)
		}
	}
	for _, a := range m.Assignments {
		b, _ := json.Marshal(a)
		if err := g.Put(spec.AssignmentsBucket, spec.EncodeKey(a.Node, a.Module), b).Refused; err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range g.TakeNewArchives() {
		g.SetArchive(w.Module, w.Digest, m.Templates[archiveName(t, m, w.Ref)])
	}
	for _, s := range g.TakeNewSecrets() {
		v, ok := m.Secrets[s]
		if !ok {
			t.Fatalf("the graph wants secret %s which the mesh does not hold", s)
		}
		g.SetSecret(s, v, time.Time{})
	}
	g.Stabilize()
	return g
}

func contents(g *nodes.NodeGraph, m *Mesh) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range g.Modules() {
		for _, f := range g.View(name).Files {
			if f.Value != nil {
				out[f.Path] = bytesOf(nil, f.Value)
			}
		}
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// bytesOf is a rendered file's bytes (rendered again when its value has
// let them go); t nil: a failure panics.
func bytesOf(t *testing.T, v *nodes.FileValue) []byte {
	b, err := v.Bytes()
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return b
}
