package fill

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestLongFileNamesAreWritten: a name of up to 255 bytes (the limit) is
// written and rewritten, its temp file's name cut to fit.
func TestLongFileNamesAreWritten(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, n := range []int{235, 236, 250, 255} {
		p := "/etc/" + strings.Repeat("n", n)
		for _, body := range []string{"one\n", "two\n"} {
			if got := fillOK(t, c, Request{Module: "m", Files: []File{{Path: p, Form: FormOwned, Content: []byte(body)}}}).Files[0].Action; got != ActionWritten {
				t.Errorf("%d bytes: %s", n, got)
			}
			mustRead(t, filepath.Join(root, p), body)
		}
	}
	noTempFiles(t, root)
}

// deepPath is a path depth directories deep below /deep.
func deepPath(depth int) string {
	return "/deep" + strings.Repeat("/d", depth-1) + "/f"
}

// TestADeepPathIsWrittenAndRemoved: a path 2,000 directories deep is
// made, rewritten and removed (each directory looked at once: see
// BenchmarkDeepPath). docs/RELIABILITY.md names this test; only its
// comment was here, merged into the benchmark's, so no test made the path.
func TestADeepPathIsWrittenAndRemoved(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := deepPath(2000)
	for _, body := range []string{"one\n", "two\n"} {
		if got := fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: p, Form: FormOwned, Content: []byte(body)}}}).Files[0].Action; got != ActionWritten {
			t.Errorf("%q: %s, want %s", body, got, ActionWritten)
		}
		mustRead(t, filepath.Join(root, p), body)
	}
	files, err := c.Delete(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Path != p || files[0].Action != ActionRemoved {
		t.Errorf("DELETE answered %+v, want %s removed", files, p)
	}
	mustAbsent(t, filepath.Join(root, p))
	noTempFiles(t, root)
}

// BenchmarkDeepPath: a fill rewriting one file 500 and 2,000 directories
// deep (made once before the timing: making them fsyncs each directory).
// Each directory is looked at once, so 2,000 costs some 4× 500, not 16×.
func BenchmarkDeepPath(b *testing.B) {
	for _, depth := range []int{500, 2000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			c := serveOn(b, &Server{Root: b.TempDir(), Log: zerolog.Nop()})
			n := 0
			fill := func() {
				n++
				req := Request{Module: "m", Files: []File{{Path: deepPath(depth), Form: FormOwned, Content: []byte(fmt.Sprint(n))}}}
				if _, err := c.Fill(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
			fill()
			for b.Loop() {
				fill()
			}
		})
	}
}

// TestAPathAndAPathBelowItAreRefusedBeforeAnything: /x and /x/y in one
// request: 400 naming both, nothing made.
func TestAPathAndAPathBelowItAreRefusedBeforeAnything(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, files := range [][]string{{"/a/x", "/a/x/y"}, {"/a/x/y/z", "/a/x"}} {
		var req Request
		req.Module = "m"
		for _, p := range files {
			req.Files = append(req.Files, File{Path: p, Form: FormOwned, Content: []byte("x")})
		}
		_, err := c.Fill(t.Context(), req)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `path "/a/x"`) || !strings.Contains(err.Error(), "file and a directory") {
			t.Errorf("%v: %v", files, err)
		}
		mustAbsent(t, filepath.Join(root, "a"))
	}
	// a sibling sharing the name's start is no such case
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/a/x", Form: FormOwned}, {Path: "/a/x-y/z", Form: FormOwned}}})
}

// TestABlockMayHoldNoMarkerOfAnyModule: a's block holding another
// module's marker line would let that module's next fill cut a's block
// short: 400 naming the line number, never its text; nothing written.
func TestABlockMayHoldNoMarkerOfAnyModule(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "b", Files: []File{{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("b\n")}}})
	for _, line := range []string{"# BEGIN mesh b", "  # END mesh b", "# END mesh a", "# BEGIN mesh zz s3cr3t"} {
		_, err := c.Fill(t.Context(), Request{Module: "a", Files: []File{
			{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")},
			{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("one\n" + line + "\nthree\n")}}})
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v", line, err)
		} else if strings.Contains(err.Error(), line) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the line's text in the error: %v", err)
		}
		mustAbsent(t, filepath.Join(root, "etc/a.conf"))
	}
	// a new file is held to the same rule
	if _, err := c.Fill(t.Context(), Request{Module: "a", Files: []File{{Path: "/etc/new", Form: FormManagedBlock, Content: []byte("# END mesh b\n")}}}); err == nil {
		t.Error("a marker line in a new file's block was written")
	}
	mustAbsent(t, filepath.Join(root, "etc/new"))
	fillOK(t, c, Request{Module: "b", Files: []File{{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("b2\n")}}})
	mustRead(t, filepath.Join(root, "etc/hosts"), "# BEGIN mesh b\nb2\n# END mesh b\n")
}

// TestManagedKeysKeepACRLFFilesLineEndings: a key replaced or added in a
// file of CRLF lines is written with CRLF.
func TestManagedKeysKeepACRLFFilesLineEndings(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/app.ini")
	writeFile(t, p, "[app]\r\nA=1\r\nB=2\r\n")
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/app.ini", Form: FormManagedKeys, Content: []byte("A=9\nC=3\n")}}})
	mustRead(t, p, "[app]\r\nA=9\r\nB=2\r\nC=3\r\n")
	// an LF file stays LF
	writeFile(t, p, "A=1\nB=2\n")
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/app.ini", Form: FormManagedKeys, Content: []byte("A=9\r\nC=3\r\n")}}})
	mustRead(t, p, "A=9\nB=2\nC=3\n")
}

// A file holding a module's block twice (an operator's copy): writing
// the first alone left the second stale and still read by the program.
// The fill is refused naming both places, nothing written, the file as
// it was; mended by hand, it is filled.
func TestAFileHoldingAModulesBlockTwiceIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/ssh/sshd_config")
	twice := "Port 22\n# BEGIN mesh m\nAllowUsers alice\n# END mesh m\n# BEGIN mesh m\nAllowUsers alice\n# END mesh m\n"
	writeFile(t, p, twice)
	req := Request{Module: "m", Files: []File{{Path: "/etc/ssh/sshd_config", Form: FormManagedBlock, Content: []byte("AllowUsers bob\n")}}}
	_, err := c.Fill(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "holds the block of module m twice") || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("a block twice: %v, want it refused naming line 5", err)
	}
	mustRead(t, p, twice)
	writeFile(t, p, "Port 22\n# BEGIN mesh m\nAllowUsers alice\n# END mesh m\n")
	fillOK(t, c, req)
	mustRead(t, p, "Port 22\n# BEGIN mesh m\nAllowUsers bob\n# END mesh m\n")
}
