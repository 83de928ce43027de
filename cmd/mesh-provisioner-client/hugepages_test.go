package main

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The heap is collapsed once settled, and again only after a collection
// whose live heap grew by a quarter since the last collapse, or since the
// least it was after it: what it grew into is in small pages. One collapse
// at a time, in the background.
func TestTheHeapIsCollapsedAgainOnceItGrewByAQuarter(t *testing.T) {
	var out bytes.Buffer
	var runs atomic.Int32
	hold := make(chan struct{})
	h := &hugeHeap{log: zerolog.New(&out), collapse: func() (collapsed, error) {
		if runs.Add(1) == 3 {
			<-hold
		}
		return collapsed{dense: 1}, nil
	}}
	h.collected(1 << 30)
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d collapses before the cold start was settled, want none", n)
	}
	h.settled()
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d collapses once settled, want 1", n)
	}
	h.last.Store(100 << 20)
	h.collected(124 << 20)
	waitIdle(t, h)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the live heap grew from 100 to 124 MiB: %d collapses, want still 1", n)
	}
	h.collected(125 << 20)
	waitRuns(t, &runs, 2)
	waitIdle(t, h)
	h.collected(150 << 20) // under a quarter over 125: nothing
	waitIdle(t, h)
	if n := runs.Load(); n != 2 {
		t.Fatalf("the live heap grew from 125 to 150 MiB: %d collapses, want still 2", n)
	}
	h.collected(157 << 20) // a quarter over 125: again, held
	waitRuns(t, &runs, 3)
	h.collected(1 << 30)
	close(hold)
	waitIdle(t, h)
	if n := runs.Load(); n != 3 {
		t.Fatalf("a collection during a collapse started another: %d collapses, want 3", n)
	}
	h.collected(100 << 20) // shrank: the least since
	h.collected(120 << 20)
	waitIdle(t, h)
	if n := runs.Load(); n != 3 {
		t.Fatalf("shrunk to 100 MiB and grown to 120: %d collapses, want still 3", n)
	}
	h.collected(125 << 20) // a quarter over the least since
	waitRuns(t, &runs, 4)
	waitIdle(t, h)
	if got := strings.Count(out.String(), "the heap is in huge pages"); got != 4 {
		t.Errorf("%d log lines for 4 collapses:\n%s", got, out.String())
	}
	var none *hugeHeap // huge pages off
	none.settled()
	none.collected(1 << 30)
}

// A kernel that collapses nothing (before Linux 6.1) is asked once and
// said once; one that had no huge page to give just then is asked again
// at the next regrowth.
func TestAKernelThatRefusesIsNotAskedAgainAndOneOutOfHugePagesIs(t *testing.T) {
	for _, c := range []struct {
		err   error
		again bool
	}{
		{fmt.Errorf("%w: madvise: invalid argument", errCollapseRefused), false},
		{errors.New("madvise MADV_COLLAPSE: resource temporarily unavailable"), true},
	} {
		var out bytes.Buffer
		var runs atomic.Int32
		h := &hugeHeap{log: zerolog.New(&out), collapse: func() (collapsed, error) {
			runs.Add(1)
			return collapsed{sparse: 3}, c.err
		}}
		h.settled()
		h.last.Store(100 << 20)
		h.collected(200 << 20)
		waitIdle(t, h)
		if got, want := runs.Load(), map[bool]int32{false: 1, true: 2}[c.again]; got != want {
			t.Errorf("%v: %d collapses asked (settled, then regrown), want %d", c.err, got, want)
		}
		if !strings.Contains(out.String(), "the heap stays in small pages") || !strings.Contains(out.String(), c.err.Error()) {
			t.Errorf("%v: the log does not say why the heap stays in small pages:\n%s", c.err, out.String())
		}
	}
}

// The pacer tells what it marked live after each collection.
func TestThePacerTellsTheLiveHeapAfterEachCollection(t *testing.T) {
	p := newPacer()
	var told atomic.Uint64
	p.afterEach(func(live uint64) { told.Store(live) })
	keep := make([]byte, 8<<20)
	runtime.GC()
	p.pace()
	if live := p.samples[mLive].Value.Uint64(); told.Load() != live || live < 8<<20 {
		t.Errorf("told %d after a collection that marked %d live (8 MiB kept)", told.Load(), live)
	}
	runtime.KeepAlive(keep)
	var none *pacer // the operator's GOGC
	none.afterEach(func(uint64) {})
}

func waitRuns(t *testing.T, runs *atomic.Int32, want int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); runs.Load() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d collapses after 5 s, want %d", runs.Load(), want)
		}
	}
}

func waitIdle(t *testing.T, h *hugeHeap) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.running.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a collapse still running after 5 s")
		}
	}
}
