package filltest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirLastsUntilRemoveAll(t *testing.T) {
	parent := t.TempDir()
	var made []string
	t.Run("a benchmark", func(t *testing.T) {
		for range 2 {
			dir := Dir(t, parent, "bench")
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			made = append(made, dir)
		}
	})
	if made[0] == made[1] {
		t.Fatalf("two calls made one directory: %s", made[0])
	}
	for _, dir := range made {
		if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
			t.Fatalf("the directory did not outlast its benchmark: %v", err)
		}
	}
	RemoveAll()
	for _, dir := range made {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after RemoveAll (%v)", dir, err)
		}
	}
}

// Under BENCH_KEEP (make bench) the directories under the temp dir, which
// make bench removes at its end, are kept; one made elsewhere (a tmpfs
// run's, under /dev/shm) is removed, or nothing would.
func TestUnderBenchKeepOnlyTheTempDirsAreKept(t *testing.T) {
	tmp, elsewhere := t.TempDir(), t.TempDir() // siblings
	t.Setenv("BENCH_KEEP", "1")
	t.Setenv("TMPDIR", tmp)
	var inTmp, outside string
	t.Run("a benchmark", func(t *testing.T) {
		inTmp, outside = Dir(t, "", "bench"), Dir(t, elsewhere, "bench")
	})
	RemoveAll()
	if _, err := os.Stat(inTmp); err != nil {
		t.Fatalf("the directory under the temp dir was removed under BENCH_KEEP: %v", err)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Fatalf("%s, outside the temp dir, is still there after RemoveAll (%v)", outside, err)
	}
	t.Setenv("BENCH_KEEP", "")
	RemoveAll()
	if _, err := os.Stat(inTmp); !os.IsNotExist(err) {
		t.Fatalf("%s is still there after RemoveAll without BENCH_KEEP (%v)", inTmp, err)
	}
}
