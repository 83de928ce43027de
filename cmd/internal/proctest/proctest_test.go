package proctest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestNumKeepsThreeSignificantDigitsWithoutAnExponent(t *testing.T) {
	for v, want := range map[float64]string{0.000921: "0.000921", 0.15: "0.15", 1.0249: "1.02", 612.4: "612", 1234: "1230", 96: "96"} {
		if got := Num(v); got != want {
			t.Errorf("Num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestGCsAreReadFromTheRuntimesTrace(t *testing.T) {
	p := &Proc{out: &lockedBuffer{}}
	p.out.Write([]byte(`{"level":"warn"}
gc 3 @0.072s 4%: 0.26+7.7+0.057 ms clock, 0.52+0.71/0.20/0.22+0.11 ms cpu, 11->13->12 MB, 13 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 4 @121.5s 0%: 0.25+19+0.40 ms clock, 0.50+0.16/3.5/0.27+0.81 ms cpu, 22->23->13 MB, 24 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
`))
	gcs := p.GCs()
	if len(gcs) != 2 {
		t.Fatalf("%d collections read, want 2: %+v", len(gcs), gcs)
	}
	if g := gcs[1]; g.Live != 13<<20 || !g.Forced || g.At != 121500*time.Millisecond || g.Wall != 19650*time.Microsecond || g.CPU < 5230*time.Microsecond || g.CPU > 5250*time.Microsecond {
		t.Fatalf("the forced collection read as %+v", g)
	}
	if gcs[0].Forced {
		t.Fatal("a collection the heap's growth started read as forced")
	}
	if _, ok := p.WaitGC(time.Minute, 0); !ok {
		t.Fatal("no collection after a minute found")
	}
	if _, ok := p.WaitGC(200*time.Second, 0); ok {
		t.Fatal("a collection found after the last one")
	}
}

func TestFilesSeesAFileRenamedIntoPlaceWithItsNewBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify")
	}
	dir := t.TempDir()
	w := WatchFiles(t)
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.conf")
	write := func(s string) {
		tmp := filepath.Join(dir, ".tmp")
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("slot = v1\n")
	if _, err := w.Wait(path, []byte("v1\n"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other"), []byte("slot = v2\n"), 0o644)
	before := time.Now()
	write("slot = v2\n")
	at, err := w.Wait(path, []byte("v2\n"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) {
		t.Fatalf("the write of v2 was seen at %v, before it was made (%v)", at, before)
	}
	if _, err := w.Wait(path, []byte("v3\n"), 50*time.Millisecond); err == nil {
		t.Fatal("a value never written was seen")
	}
}

func TestCPUAgreesWithTheKernelsTicks(t *testing.T) {
	pid := os.Getpid()
	c0, t0 := CPU(t, pid), ticks(t, pid)
	for ticks(t, pid)-t0 < 100*time.Millisecond { // spins until the coarse count moved 100 ms
	}
	if d := CPU(t, pid) - c0; d < 80*time.Millisecond {
		t.Fatalf("at least 90 ms of spinning (100 ms of ticks) counted as %v", d)
	}
}

func TestRunsCountsEachWakeUp(t *testing.T) {
	pid := os.Getpid()
	r0 := Runs(t, pid)
	if r0 < 0 {
		t.Skip("no schedstat")
	}
	for range 50 { // each sleep ends in a wake-up: the thread is put on a CPU again
		time.Sleep(time.Millisecond)
	}
	if d := Runs(t, pid) - r0; d < 50 || d > 1000 { // a count, not nanoseconds: the runtime's own threads wake too, not twenty times as often
		t.Fatalf("50 sleeps counted as %d runs", d)
	}
}
