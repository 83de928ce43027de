package archive

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
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

// RFC 8089: file://localhost/p is file:///p (the host "localhost", in any
// case, percent-encoded or not, is this machine); a ref naming any other
// host is refused with a reason naming the ref and the host, and is not
// something to wait for.
func TestAFileRefMayNameLocalhost(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tar", data)
	p := strings.TrimPrefix(ref, "file://")
	for _, host := range []string{"localhost", "LocalHost", "local%68ost"} {
		got, err := (&Store{}).Get(context.Background(), "file://"+host+p, digestOf(data))
		if err != nil {
			t.Fatalf("host %s: %v", host, err)
		}
		if !maps.EqualFunc(got, sampleWant, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("host %s: members %q", host, got)
		}
	}
	for _, host := range []string{"forge.mesh.internal", "127.0.0.1", "localhost:22", "localhost%2F"} {
		r := "file://" + host + p
		_, err := (&Store{}).Get(context.Background(), r, digestOf(data))
		wantErr(t, err, nil, "templates archive "+r+":", "host", "only a file of this machine")
		if errors.Is(err, ErrNotThereYet) {
			t.Errorf("ref %q: another host is not something to wait for: %v", r, err)
		}
	}
}
