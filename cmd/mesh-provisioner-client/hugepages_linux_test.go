package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Three 2 MiB stretches of anonymous memory: one whole, one with 300 of its
// 512 small pages written, one with 100. The first two are collapsed into
// huge pages with their bytes as they were; the third, mostly holes, is
// left as it was (collapsing it would make 1.6 MiB of nothing resident).
func TestTheDenseStretchesAreCollapsedWithTheirBytesAndASparseOneIsNot(t *testing.T) {
	small := os.Getpagesize()
	per := hugePage / small
	// Mapped inaccessible around, so the kernel merges it with nothing.
	all, err := unix.Mmap(-1, 0, 5*hugePage, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(all)
	off := hugePage - int(addr(all)%hugePage)
	mem := all[off : off+3*hugePage]
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		t.Fatal(err)
	}
	written := map[int]int{0: per, 1: 300, 2: 100} // stretch → its first pages written
	for s, n := range written {
		for p := 0; p < n; p++ {
			at := s*hugePage + p*small
			copy(mem[at:], fmt.Sprintf("stretch %d page %d", s, p))
		}
	}
	c, err := collapseHeap()
	if err != nil && c.dense == 0 && errors.Is(err, unix.EINVAL) {
		t.Skipf("this kernel collapses nothing (%v): MADV_COLLAPSE is Linux 6.1 and later", err)
	}
	huge, rss := smapsOf(t, addr(mem))
	if huge != 2*hugePage/1024 {
		t.Errorf("%d kB of the three stretches in huge pages, want the two dense ones' %d (collapse: %+v, %v)", huge, 2*hugePage/1024, c, err)
	}
	if want := (2*hugePage + 100*small) / 1024; rss != want {
		t.Errorf("%d kB of the three stretches resident, want %d: the sparse one's holes were filled", rss, want)
	}
	for s, n := range written {
		for p := 0; p < n; p++ {
			at := s*hugePage + p*small
			want := fmt.Sprintf("stretch %d page %d", s, p)
			if got := string(mem[at : at+len(want)]); got != want {
				t.Fatalf("stretch %d page %d reads %q after the collapse", s, p, got)
			}
		}
	}
	if c.dense < 2 || c.sparse < 1 || c.huge < 2*hugePage {
		t.Errorf("the collapse says %+v: at least the two dense stretches collapsed, the sparse one left, 4 MiB in huge pages", c)
	}
}

// The operator's --huge-pages=false or GODEBUG=disablethp=1, and a machine
// whose transparent huge pages are never, are kept: no collapse is asked.
// Otherwise it is, once settled, and the log says what it did.
func TestHugePagesAreAskedUnlessTurnedOffOrTheMachineSaysNever(t *testing.T) {
	dir := t.TempDir()
	setting := func(s string) string {
		p := filepath.Join(dir, strings.Trim(s, "[] "))
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out bytes.Buffer
	log := zerolog.New(&out)
	if newHugeHeap(false, setting("always [madvise] never"), log) != nil {
		t.Error("--huge-pages=false: a collapse is still asked")
	}
	if newHugeHeap(true, setting("always madvise [never]"), log) != nil {
		t.Error("the machine says never: a collapse is still asked")
	}
	if !strings.Contains(out.String(), "never") || !strings.Contains(out.String(), "the heap stays in small pages") {
		t.Errorf("the log does not say why the heap stays in small pages: %s", out.String())
	}
	out.Reset()
	t.Setenv("GODEBUG", "madvdontneed=1,disablethp=1")
	if newHugeHeap(true, setting("always [madvise] never"), log) != nil {
		t.Error("GODEBUG=disablethp=1: a collapse is still asked")
	}
	if !strings.Contains(out.String(), "disablethp=1") {
		t.Errorf("the log does not say GODEBUG kept the heap in small pages: %s", out.String())
	}
	t.Setenv("GODEBUG", "")
	out.Reset()
	keep := make([]byte, 8*hugePage) // dense: written through
	for i := range keep {
		keep[i] = byte(i)
	}
	huge := newHugeHeap(true, setting("always [madvise] never"), log)
	if huge == nil {
		t.Fatal("madvise: no collapse asked")
	}
	huge.settled()
	if !strings.Contains(out.String(), `"message":"the heap is in huge pages"`) || !strings.Contains(out.String(), `"huge_mib":`) {
		t.Errorf("the log does not say the heap was collapsed: %s", out.String())
	}
	if keep[len(keep)-1] != byte(len(keep)-1) {
		t.Error("the heap's bytes moved in the collapse")
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// smapsOf reads the AnonHugePages and Rss of the mapping that starts at
// start, in kB.
func smapsOf(t *testing.T, start uintptr) (huge, rss int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if lo, _, ok := strings.Cut(strings.Fields(l)[0], "-"); ok && !strings.HasSuffix(strings.Fields(l)[0], ":") {
			v, err := strconv.ParseUint(lo, 16, 64)
			in = err == nil && uintptr(v) == start
			continue
		}
		if !in {
			continue
		}
		fs := strings.Fields(l)
		switch fs[0] {
		case "AnonHugePages:":
			huge, _ = strconv.Atoi(fs[1])
		case "Rss:":
			rss, _ = strconv.Atoi(fs[1])
		}
	}
	return huge, rss
}
