package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/novox/mesh-provisioner/graph
BenchmarkOneChange/files=1000-2   	 1090825	      1021 ns/op	    202186 full-rerender-ns	         2.000 nodes/change
pkg: github.com/novox/mesh-provisioner/cmd/internal/daemon
BenchmarkPeer/ratio-2   	       1	    267154 ns/op	       251.4 x-less-cpu/change
--- BENCH: BenchmarkPeer/ratio-2
    bench_peer_test.go:100: target | CPU per one-value change, consul-template ÷ ours | ≥ 500× | 251× | not met
    bench_peer_test.go:101: target | change → file on disk p50, consul-template ÷ ours | ≥ 200× | 1580× | met
PASS
`

func TestTheTableNamesEachBenchmarkWithItsMetricsAndLandsBetweenTheMarkers(t *testing.T) {
	table, err := tableOf(strings.NewReader(sample), "bench")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "| graph.OneChange/files=1000 | 1021 ns/op, 202186 full-rerender-ns, 2.000 nodes/change |") {
		t.Fatalf("table:\n%s", table)
	}
	doc := filepath.Join(t.TempDir(), "P.md")
	os.WriteFile(doc, []byte("# P\n\nkept\n"), 0o644)
	for i := 0; i < 2; i++ {
		if err := writeInto(doc, "bench", table); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(doc)
	if strings.Count(string(b), "graph.OneChange") != 1 || !strings.Contains(string(b), "kept") {
		t.Fatalf("doc:\n%s", b)
	}
	if _, err := tableOf(strings.NewReader("nothing"), "bench"); err == nil {
		t.Fatal("no error for output without benchmarks")
	}
}

func TestTargetLinesBecomeATableSayingMetOrNotMet(t *testing.T) {
	table, err := tableOf(strings.NewReader(sample), "bench-peer")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Latest `make bench-peer`",
		"| target | bound | measured | met? |",
		"| CPU per one-value change, consul-template ÷ ours | ≥ 500× | 251× | **not met** |",
		"| change → file on disk p50, consul-template ÷ ours | ≥ 200× | 1580× | met |",
	} {
		if !strings.Contains(table, want) {
			t.Fatalf("no %q in the table:\n%s", want, table)
		}
	}
}

func TestEachMakeTargetKeepsItsOwnSectionOfTheDoc(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "P.md")
	os.WriteFile(doc, []byte("# P\n"), 0o644)
	for i := 0; i < 2; i++ {
		if err := writeInto(doc, "bench", "bench table\n"); err != nil {
			t.Fatal(err)
		}
		if err := writeInto(doc, "bench-peer", "peer table\n"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(doc)
	s := string(b)
	if strings.Count(s, "bench table") != 1 || strings.Count(s, "peer table") != 1 || !strings.Contains(s, "## Latest `make bench-peer`") {
		t.Fatalf("doc:\n%s", s)
	}
}
