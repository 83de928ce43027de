package chaos

import "testing"

// TestEveryFaultKindRecursInALongSchedule: a fault that has ended may be
// drawn again. Before, draw never cleared its "down" flags when it wrote a
// fault's end, so a 3-minute schedule (1,740 drawn) held one member kill,
// one vault silence, two client kills, and no whole-cluster restart after
// the first member kill: the rest was churn, cut connections and refusals.
// It also checks that no fault starts while the same one is still on.
func TestEveryFaultKindRecursInALongSchedule(t *testing.T) {
	w, err := newWorld()
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{700, 900, 1300} {
		steps := draw(seed, 1740, w, allFaults)
		count := map[string]int{}
		memberDown, silent := false, false
		fillDown, slow, clientDown := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i, s := range steps {
			count[s.Op]++
			bad := false
			switch s.Op {
			case opKillMember:
				bad, memberDown = memberDown, true
			case opStartMember:
				memberDown = false
			case opRestartBus:
				bad = memberDown
			case opVaultSilent:
				bad, silent = silent, true
			case opVaultSpeak:
				silent = false
			case opFillStop:
				bad, fillDown[s.Node] = fillDown[s.Node], true
			case opFillStart:
				fillDown[s.Node] = false
			case opFillBetween:
				bad = fillDown[s.Node]
			case opFillSlow:
				bad, slow[s.Node] = slow[s.Node], true
			case opFillFast:
				slow[s.Node] = false
			case opKillClient:
				bad, clientDown[s.Node] = clientDown[s.Node], true
			case opStartClient:
				clientDown[s.Node] = false
			}
			if bad {
				t.Errorf("seed %d step %d: %s while the same fault is on", seed, i, s)
			}
		}
		for _, op := range []string{opKillMember, opRestartBus, opVaultSilent, opFillStop, opFillSlow, opKillClient, opFillBetween} {
			if count[op] < 10 {
				t.Errorf("seed %d, 1740 steps drawn: %s %d times, want 10 or more (%v)", seed, op, count[op], count)
			}
		}
	}
}

// TestTheRegressionSeedsKeepTheirSchedules: a regression seed draws what
// it drew when it found its defect (fs.once): 342810's 44 steps with its
// fill-stop, restart-bus and kill-client where they were, not the
// schedule a fault drawn again makes from step 22 on.
func TestTheRegressionSeedsKeepTheirSchedules(t *testing.T) {
	w, err := newWorld()
	if err != nil {
		t.Fatal(err)
	}
	fs := shortFaults
	fs.once = true
	steps := draw(342810, shortSteps, w, fs)
	if len(steps) != 44 || steps[27].Op != opFillStop || steps[28].Op != opRestartBus || steps[34].Op != opKillClient {
		t.Errorf("seed 342810 no longer draws the schedule that found its defect:\n%s", describe(steps))
	}
}
