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
