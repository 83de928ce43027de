package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

func TestUnsafeMembers(t *testing.T) {
	ok := file("config.toml", "x")
	cases := []struct {
		name   string
		member member
		say    string
	}{
		{"dotdot", file("../etc/passwd", "x"), `"../etc/passwd": name holds ".."`},
		{"inner dotdot", file("a/../../x", "x"), `"a/../../x": name holds ".."`},
		{"absolute", file("/etc/passwd", "x"), `"/etc/passwd": absolute name`},
		{"unclean", file("a//b", "x"), `"a//b": name is not clean`},
		{"symlink", member{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/shadow"}}, `"link": symlink`},
		{"hard link", member{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "hard", Linkname: "config.toml"}}, `"hard": hard link`},
		{"fifo", member{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "pipe"}}, `"pipe": fifo`},
		{"device", member{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "dev/null", Devmajor: 1, Devminor: 3}}, `"dev/null": character device`},
		{"duplicate", file("./config.toml", "y"), `"./config.toml": named twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := makeTar(t, true, ok, c.member)
			ref, _ := writeArchive(t, "t.tgz", data)
			_, err := (&Store{Dir: t.TempDir()}).Get(context.Background(), ref, digestOf(data))
			wantErr(t, err, ErrUnsafeMember, "templates archive "+ref+": unsafe member "+c.say)
		})
	}
}

func TestMemberCountLimit(t *testing.T) {
	build := func(n int) []byte {
		ms := make([]member, n)
		for i := range ms {
			ms[i] = file(fmt.Sprintf("f%05d", i), "")
		}
		return makeTar(t, false, ms...)
	}
	at := build(spec.MaxArchiveMembers)
	ref, _ := writeArchive(t, "at.tar", at)
	got, err := (&Store{}).Get(context.Background(), ref, digestOf(at))
	if err != nil {
		t.Fatalf("%d members: %v", spec.MaxArchiveMembers, err)
	}
	if len(got) != spec.MaxArchiveMembers {
		t.Fatalf("got %d members, want %d", len(got), spec.MaxArchiveMembers)
	}

	over := build(spec.MaxArchiveMembers + 1)
	ref, _ = writeArchive(t, "over.tar", over)
	_, err = (&Store{}).Get(context.Background(), ref, digestOf(over))
	wantErr(t, err, ErrLimit, ref, "more than 10000 members")
}

// gzipBomb is a gzipped tar whose one member is 100 MiB of zeros: gzip
// members concatenated (a gzip stream may hold many), so it is cheap to make.
func gzipBomb(t testing.TB) []byte {
	t.Helper()
	const size = 100 << 20
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "zeros", Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	var out bytes.Buffer
	out.Write(gz(hdr.Bytes()))
	mib := gz(make([]byte, 1<<20))
	for range size>>20 + 1 { // the data, then the end-of-archive blocks
		out.Write(mib)
	}
	return out.Bytes()
}

func TestGzipBomb(t *testing.T) {
	data := gzipBomb(t)
	if len(data) > 1<<20 {
		t.Fatalf("bomb is %d bytes compressed; meant to be small", len(data))
	}
	ref, _ := writeArchive(t, "bomb.tgz", data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := (&Store{Dir: t.TempDir()}).Get(context.Background(), ref, digestOf(data))
	runtime.ReadMemStats(&after)
	wantErr(t, err, ErrLimit, ref, "over 64 MiB uncompressed", `"zeros"`)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("refusing the bomb allocated %d MiB", alloc>>20)
	}
}

// A bomb in tar headers (a PAX record of many bytes) is counted as it is
// decompressed, not only by the members' sizes.
func TestHeaderBomb(t *testing.T) {
	data := makeTar(t, true, member{
		hdr: tar.Header{Typeflag: tar.TypeReg, Name: "a", PAXRecords: map[string]string{"comment": strings.Repeat("x", 200<<10)}},
	})
	_, err := readArchive(bytes.NewReader(data), limits{bytes: 64 << 10, members: 10})
	wantErr(t, err, ErrLimit, "over 65536 bytes uncompressed")

	// The same archive under a roomier limit reads.
	if _, err := readArchive(bytes.NewReader(data), limits{bytes: 1 << 20, members: 10}); err != nil {
		t.Fatal(err)
	}
}

// A member whose header claims more than the limit is refused on its header,
// before its data is read (here there is none to read).
func TestMemberSizeRefusedOnHeader(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "b", Size: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	tw.Flush() // a header and no data: reading it would fail on a short body
	_, err := readArchive(bytes.NewReader(buf.Bytes()), limits{bytes: 4096, members: 10})
	wantErr(t, err, ErrLimit, `(at member "b")`)
}

func TestNotATar(t *testing.T) {
	data := []byte("this is not a tar archive, nor gzip; it is text long enough to fill a header block? no")
	ref, _ := writeArchive(t, "x.tar", data)
	_, err := (&Store{}).Get(context.Background(), ref, digestOf(data))
	wantErr(t, err, ErrNotTar, ref, "reading tar")

	gzBad := []byte{0x1f, 0x8b, 0x08, 0, 0, 0}
	ref, _ = writeArchive(t, "x.tgz", gzBad)
	_, err = (&Store{}).Get(context.Background(), ref, digestOf(gzBad))
	wantErr(t, err, ErrNotTar, ref, "reading gzip")
}

// A directory member's name is checked like any other's (an absolute one
// or one holding ".." is refused, naming it); a well-named one is skipped.
func TestDirectoryMembersAreNameChecked(t *testing.T) {
	dir := func(name string) member {
		return member{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
	}
	for _, c := range []struct{ name, say string }{
		{"/etc/", `"/etc/": absolute name`},
		{"../up/", `"../up/": name holds ".."`},
		{"a/../../b/", `"a/../../b/": name holds ".."`},
		{"..", `"..": name holds ".."`},
		{"a//b/", `"a//b/": name is not clean`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := makeTar(t, false, file("config.toml", "x"), dir(c.name))
			ref, _ := writeArchive(t, "t.tar", data)
			got, err := (&Store{Dir: t.TempDir()}).Get(context.Background(), ref, digestOf(data))
			wantErr(t, err, ErrUnsafeMember, "templates archive "+ref+": unsafe member "+c.say)
			if got != nil {
				t.Fatalf("members returned with the error: %q", got)
			}
		})
	}
	for _, name := range []string{"etc/", "./", "a/b/", "./conf.d/"} {
		t.Run("ok "+name, func(t *testing.T) {
			data := makeTar(t, true, dir(name), file("config.toml", "x"))
			got, err := readArchive(bytes.NewReader(data), defaultLimits)
			if err != nil {
				t.Fatalf("directory %q: %v", name, err)
			}
			if len(got) != 1 || string(got["config.toml"]) != "x" {
				t.Fatalf("directory %q: members %q", name, got)
			}
		})
	}
}
