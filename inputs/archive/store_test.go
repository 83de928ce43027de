package archive

import (
	"archive/tar"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

func sampleMembers() []member {
	return []member{
		file("config.toml", "model = \"${config:model}\"\n"),
		file("./zsh-item.sh", "export X=${port:http}\n"),
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "sub/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}},
		file("sub/empty", ""),
	}
}

var sampleWant = map[string][]byte{
	"config.toml": []byte("model = \"${config:model}\"\n"),
	"zsh-item.sh": []byte("export X=${port:http}\n"),
	"sub/empty":   {},
}

func TestGetFile(t *testing.T) {
	for _, gz := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "gzip"}[gz]
		t.Run(name, func(t *testing.T) {
			data := makeTar(t, gz, sampleMembers()...)
			ref, _ := writeArchive(t, "templates.tar", data)
			s := &Store{Dir: t.TempDir()}
			got, err := s.Get(context.Background(), ref, digestOf(data))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, sampleWant, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatalf("members = %q, want %q", got, sampleWant)
			}
			cached, err := os.ReadFile(filepath.Join(s.Dir, "templates", strings.TrimPrefix(digestOf(data), "sha256:")+".tar"))
			if err != nil {
				t.Fatalf("archive not kept in the cache: %v", err)
			}
			if string(cached) != string(data) {
				t.Fatal("cached archive differs from the fetched one")
			}
		})
	}
}

func TestGetCacheHit(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, path := writeArchive(t, "templates.tgz", data)
	dir := t.TempDir()
	if _, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// A new process (fresh Store, same state dir) fetches nothing.
	got, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data))
	if err != nil {
		t.Fatalf("second Get with the source gone: %v", err)
	}
	if len(got) != len(sampleWant) {
		t.Fatalf("got %d members, want %d", len(got), len(sampleWant))
	}

	// A damaged cache file is not trusted: it is fetched again (and the
	// source is gone, so that waits).
	cache := filepath.Join(dir, "templates", strings.TrimPrefix(digestOf(data), "sha256:")+".tar")
	if err := os.WriteFile(cache, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data))
	wantErr(t, err, ErrNotThereYet, ref, path)

	// Source back: fetched, checked and the cache repaired.
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(cache); string(b) != string(data) {
		t.Fatal("cache not repaired")
	}
}

func TestGetMemoised(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, path := writeArchive(t, "templates.tar", data)
	s := &Store{Dir: t.TempDir()}
	first, err := s.Get(context.Background(), ref, digestOf(data))
	if err != nil {
		t.Fatal(err)
	}
	// Neither the source nor the cache is read again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(s.Dir, "templates")); err != nil {
		t.Fatal(err)
	}
	second, err := s.Get(context.Background(), "file:///elsewhere/same-digest.tar", digestOf(data))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(first).Pointer() != reflect.ValueOf(second).Pointer() {
		t.Fatal("second Get returned another map")
	}
}

func TestGetConcurrent(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tgz", data)
	s := &Store{Dir: t.TempDir()}
	const n = 16
	results := make([]map[string][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = s.Get(context.Background(), ref, digestOf(data)) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if reflect.ValueOf(results[i]).Pointer() != reflect.ValueOf(results[0]).Pointer() {
			t.Fatal("concurrent Gets of one digest returned different maps")
		}
	}
}

func TestGetFailureIsNotMemoised(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	path := filepath.Join(t.TempDir(), "later.tar")
	ref := "file://" + path
	s := &Store{Dir: t.TempDir()}
	_, err := s.Get(context.Background(), ref, digestOf(data))
	wantErr(t, err, ErrNotThereYet, ref)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatalf("Get after the archive arrived: %v", err)
	}
}

func TestDigestMismatch(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tar", data)
	planned := "sha256:" + strings.Repeat("ab", 32)
	s := &Store{Dir: t.TempDir()}
	_, err := s.Get(context.Background(), ref, planned)
	want := "templates archive " + ref + ": digest mismatch: it is not the plan's " + planned
	wantErr(t, err, ErrDigestMismatch)
	if err.Error() != want {
		t.Fatalf("error = %q\nwant    %q", err, want)
	}
	// A ref may name any readable file (another module's secret): the
	// error says nothing of what was read, so no report is an oracle for it.
	got := strings.TrimPrefix(digestOf(data), "sha256:")
	if strings.Contains(err.Error(), got) || strings.Contains(err.Error(), got[:8]) {
		t.Fatalf("the error carries the digest of what was read: %q", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir, "templates")); len(entries) != 0 {
		t.Fatalf("a mismatching archive was cached: %v", entries)
	}
}

func TestBadDigestAndRefs(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tar", data)
	s := &Store{Dir: t.TempDir()}
	upper := "sha256:" + strings.ToUpper(strings.TrimPrefix(digestOf(data), "sha256:"))
	for _, d := range []string{"", upper, "sha512:" + strings.Repeat("a", 64), "sha256:abc"} {
		_, err := s.Get(context.Background(), ref, d)
		wantErr(t, err, nil, ref, "not sha256:<64 lower-case hex>")
	}
	for _, r := range []string{"http://x/y.tar", "obj://bucket-only", "obj:///name", "file://relative/x.tar"} {
		_, err := s.Get(context.Background(), r, digestOf(data))
		wantErr(t, err, nil, "templates archive "+r+":")
		if errors.Is(err, ErrNotThereYet) {
			t.Errorf("ref %q: a malformed ref is not something to wait for: %v", r, err)
		}
	}
	_, err := s.Get(context.Background(), "file:///dev/null", digestOf(data))
	wantErr(t, err, nil, "/dev/null is not a regular file")
}

func TestArchiveOverLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: costs no disk and is refused before it is read.
	if err := f.Truncate(spec.MaxArchiveBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ref := "file://" + path
	_, err = (&Store{Dir: t.TempDir()}).Get(context.Background(), ref, "sha256:"+strings.Repeat("0", 64))
	wantErr(t, err, ErrLimit, ref, "64 MiB")
}
