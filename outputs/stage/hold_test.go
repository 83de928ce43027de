package stage

import (
	"slices"
	"testing"
	"time"
)

func TestHoldAndDue(t *testing.T) {
	s, err := New(Config{FillGap: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	s.modules["web"] = newModuleOut()
	if s.hold("web", t0) {
		t.Fatal("a module never filled is held")
	}
	s.modules["web"].lastFill = t0
	if s.hold("never", t0) {
		t.Fatal("a module unknown is held")
	}
	if !s.hold("web", t0.Add(30*time.Second)) {
		t.Fatal("a module filled 30s ago is not held (gap 1m)")
	}
	if got := s.dueHeld([]string{"db"}, t0.Add(59*time.Second)); !slices.Equal(got, []string{"db"}) {
		t.Errorf("before its gap passed: %v, want [db]", got)
	}
	s.armHold()
	if s.HoldC() == nil {
		t.Fatal("something held and no wake-up armed")
	}
	if got := s.dueHeld([]string{"db", "web"}, t0.Add(time.Minute)); !slices.Equal(got, []string{"db", "web"}) {
		t.Errorf("due: %v, want [db web] (each once)", got)
	}
	if got := s.dueHeld(nil, t0.Add(2*time.Minute)); len(got) != 0 {
		t.Errorf("taken twice: %v", got)
	}
	if s.hold("web", t0.Add(time.Minute)) {
		t.Error("held once the gap passed")
	}
	s.Woke()
	if s.HoldC() != nil {
		t.Error("a wake-up still armed after Woke")
	}
	noGap, _ := New(Config{})
	noGap.modules["web"] = &moduleOut{lastFill: t0}
	if noGap.hold("web", t0) {
		t.Error("held with no FillGap")
	}
}
