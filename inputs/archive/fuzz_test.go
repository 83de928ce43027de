package archive

import (
	"archive/tar"
	"bytes"
	"testing"
)

func FuzzReadArchive(f *testing.F) {
	f.Add(makeTar(f, false, sampleMembers()...))
	f.Add(makeTar(f, true, sampleMembers()...))
	f.Add(makeTar(f, false, member{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/"}}))
	f.Add([]byte{0x1f, 0x8b})
	lim := limits{bytes: 1 << 20, members: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := readArchive(bytes.NewReader(data), lim)
		if err != nil {
			if files != nil {
				t.Fatal("files returned with an error")
			}
			// The bytes are the plan's (their digest chose them): no
			// fetch again mends them, so every refusal fails the module.
			if !Broken(err) {
				t.Fatalf("refused, but not Broken: %v", err)
			}
			return
		}
		if len(files) > lim.members {
			t.Fatalf("%d members over the limit %d", len(files), lim.members)
		}
		var total int64
		for name, b := range files {
			total += int64(len(b))
			if n, err := memberName(name); err != nil || n != name {
				t.Fatalf("member name %q accepted: %v", name, err)
			}
		}
		if total > lim.bytes {
			t.Fatalf("%d bytes over the limit %d", total, lim.bytes)
		}
	})
}
