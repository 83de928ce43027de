package archive

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// A file:// ref is a file URI (RFC 8089): its path is percent-decoded, so
// file:///srv/my%20templates.tar names "/srv/my templates.tar" (what a
// tool writing a file URI makes of that path), and a space written as
// itself still names it too.
func TestAFileRefIsPercentDecoded(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	dir := t.TempDir()
	p := filepath.Join(dir, "my templates%.tar")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + dir + "/my%20templates%25.tar", "file://" + dir + "/my templates%25.tar"} {
		got, err := (&Store{}).Get(context.Background(), ref, digestOf(data))
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if !maps.EqualFunc(got, sampleWant, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("%s: members %q", ref, got)
		}
	}
}
