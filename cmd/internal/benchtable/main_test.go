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
PASS
`

func TestTheTableNamesEachBenchmarkWithItsMetricsAndLandsBetweenTheMarkers(t *testing.T) {
	table, err := tableOf(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "| graph.OneChange/files=1000 | 1021 ns/op, 202186 full-rerender-ns, 2.000 nodes/change |") {
		t.Fatalf("table:\n%s", table)
	}
	doc := filepath.Join(t.TempDir(), "P.md")
	os.WriteFile(doc, []byte("# P\n\nkept\n"), 0o644)
	for i := 0; i < 2; i++ {
		if err := writeInto(doc, table); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(doc)
	if strings.Count(string(b), "graph.OneChange") != 1 || !strings.Contains(string(b), "kept") {
		t.Fatalf("doc:\n%s", b)
	}
	if _, err := tableOf(strings.NewReader("nothing")); err == nil {
		t.Fatal("no error for output without benchmarks")
	}
}
