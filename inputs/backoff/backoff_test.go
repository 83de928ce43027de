package backoff

import (
	"testing"
	"time"
)

func TestDoublingDoublesToCap(t *testing.T) {
	var b Doubling
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}
	for i, w := range want {
		if got := b.Next(i); got != w*time.Second {
			t.Errorf("Next(%d) = %s, want %s", i, got, w*time.Second)
		}
	}
	if got := b.Next(1 << 30); got != time.Minute {
		t.Errorf("Next(huge) = %s, want 1m", got)
	}
	small := Doubling{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	for i, w := range []time.Duration{10, 20, 40, 50, 50} {
		if got := small.Next(i); got != w*time.Millisecond {
			t.Errorf("small Next(%d) = %s, want %s", i, got, w*time.Millisecond)
		}
	}
}

func TestCounterCountsAndResets(t *testing.T) {
	c := Counter{Doubling: Doubling{Min: time.Second, Max: 30 * time.Second}}
	for _, w := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		if got := c.Next(); got != w*time.Second {
			t.Errorf("Next() = %s, want %s", got, w*time.Second)
		}
	}
	c.Reset()
	if got := c.Next(); got != time.Second {
		t.Errorf("after Reset, Next() = %s, want 1s", got)
	}
}

func TestJitterStaysWithinAFifth(t *testing.T) {
	d := 5 * time.Second
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		j := Jitter(d)
		if j < d*4/5 || j > d*6/5 {
			t.Fatalf("Jitter(%s) = %s, outside [4s, 6s]", d, j)
		}
		seen[j] = true
	}
	if len(seen) < 2 {
		t.Fatalf("Jitter(%s) always %v", d, seen)
	}
	if Jitter(0) != 0 {
		t.Fatal("Jitter(0) is not 0")
	}
}
