package bus

import (
	"testing"
	"time"
)

func TestTakeHeldSaysAndForgetsWhatWasHeldBack(t *testing.T) {
	ls := WarnLimits{Burst: 2, Every: time.Hour}
	for range 5 {
		ls.Allow("b")
	}
	if n := ls.TakeHeld("b"); n != 3 {
		t.Errorf("held %d, want 3", n)
	}
	if n := ls.TakeHeld("b"); n != 0 {
		t.Errorf("held again %d, want 0", n)
	}
	if n := ls.TakeHeld("never"); n != 0 {
		t.Errorf("a name never warned of: %d", n)
	}
}
