package scale

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
)

// TarGz makes a gzipped tar of members (sorted by name) and its digest
// sha256:<hex>, as a plan names it.
func TarGz(members map[string][]byte) ([]byte, string, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(members[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, "", fmt.Errorf("scale: archive member %s: %w", n, err)
		}
		if _, err := tw.Write(members[n]); err != nil {
			return nil, "", fmt.Errorf("scale: archive member %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("scale: closing the archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, "", fmt.Errorf("scale: closing the archive: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}
