package fill

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// writeStateFile writes raw to p, a state or pending file, whole or not
// at all: a temp file staged in the state dir itself, then renamed over
// p. renameio stages in $TMPDIR by default when a rename from there
// works: root made files in a directory every user may write, and a
// crash left them where no sweep of mesh-fill's looks.
func writeStateFile(p string, raw []byte) error {
	return renameio.WriteFile(p, raw, 0o600, renameio.WithTempDir(filepath.Dir(p)))
}

// stagedStateFile says whether name, in the state dir, is a temp file
// writeStateFile stages (renameio's: a dot, the state or pending file's
// name, a decimal number), as a mesh-fill stopped mid-write leaves it.
func stagedStateFile(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, "module-"); !ok {
		if rest, ok = strings.CutPrefix(rest, "pending-"); !ok {
			return false
		}
	}
	digest, num, ok := strings.Cut(rest, ".json")
	return ok && len(digest) == 32 && strings.Trim(digest, "0123456789abcdef") == "" &&
		num != "" && strings.Trim(num, "0123456789") == ""
}

// removeStaged removes e, a temp file of the state dir dir (stagedStateFile) left by a
// mesh-fill stopped mid-write, when it is a regular file.
func removeStaged(dir string, e os.DirEntry) error {
	if !e.Type().IsRegular() {
		return nil
	}
	return os.Remove(filepath.Join(dir, e.Name()))
}
