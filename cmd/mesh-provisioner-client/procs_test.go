package main

import (
	"runtime"
	"testing"
)

func TestOneProcAfterTheColdStartUnlessTheOperatorChoseGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "3")
	if oneProcAfterColdStart() != nil {
		t.Fatal("GOMAXPROCS set by the operator: the daemon must keep it")
	}
	t.Setenv("GOMAXPROCS", "")
	settled := oneProcAfterColdStart()
	if settled == nil {
		t.Fatal("no OnSettled without GOMAXPROCS in the environment")
	}
	runtime.GOMAXPROCS(2)
	settled()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after the cold start, want 1", n)
	}
}
