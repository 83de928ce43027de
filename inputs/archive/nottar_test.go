package archive

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
)

// Bytes of the plan's digest that do not read as a tar, gzipped or not,
// fail the module (Broken) with the reason, as a digest mismatch does:
// the digest chose those bytes, so waiting for a fetch again would wait
// for ever (they were "waiting", fetched again with backoff, never failed).
func TestBytesOfThePlansDigestThatAreNotATarAreBroken(t *testing.T) {
	rnd := rand.New(rand.NewChaCha8([32]byte{7}))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return string(b)
	}
	gzipped := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	tgz := makeTar(t, true, file("big.txt", random(64<<10)))
	cases := []struct {
		name string
		data []byte
		say  string
	}{
		{"random bytes", []byte("\x00" + random(4095)), "reading tar: archive/tar: invalid tar header"},
		{"a tar gzipped twice", gzipped(makeTar(t, true, sampleMembers()...)), "reading tar: unexpected EOF"},
		{"text", []byte(strings.Repeat("not a tar, only text\n", 40)), "reading tar: archive/tar: invalid tar header"},
		{"short text", []byte("model = \"x\"\n"), "reading tar: unexpected EOF"},
		{"a truncated tar.gz", tgz[:len(tgz)/2], `reading member "big.txt": unexpected EOF`},
		{"a gzip header cut short", tgz[:6], "reading gzip: unexpected EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref, _ := writeArchive(t, "t.tgz", c.data)
			w := nodes.ArchiveWant{Module: "web", Ref: ref, Digest: digestOf(c.data)}
			f := newFetcher(t)
			f.Fetch(w)
			r, ok := nextFetched(t, f, 5*time.Second)
			if !ok {
				t.Fatal("nothing delivered")
			}
			if r.Want != w || r.Members != nil || !Broken(r.Err) {
				t.Fatalf("want a broken archive, got %+v", r)
			}
			wantErr(t, r.Err, ErrNotTar, "templates archive "+ref+": not a readable tar (gzipped or not): "+c.say)
		})
	}
}
