package control

import (
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// Filling is the reason given for a module whose every value is there
// while its fill is not answered yet.
const Filling = "filling: its files are with the node-engine, not answered yet"

// StateOf is what module v's report says (or will say at the end of the
// batch), from its view and what the stage last said of it (said; ok
// false: nothing yet): the view's state; failed when the fill socket
// failed or an item could not be recorded; waiting, Filling, while every
// value is there but the node-engine has not answered the fill (a first
// fill, a slow restart), as the report still says, not applied ahead of
// it.
func StateOf(v *nodes.ModuleView, said stage.Said, ok bool) ModuleState {
	s := ModuleState{State: StateWord(v.State), Reason: v.Reason, Since: v.Since}
	switch {
	case ok && v.Ready() && said.Reason != "":
		s.State, s.Reason, s.Fill = "failed", said.Reason, said.Failure
	case v.Ready() && (!ok || said.State != "applied"):
		s.State, s.Reason = "waiting", Filling
	}
	switch {
	case s.Fill != "" && s.Reason == s.Fill && !said.FailedSince.IsZero():
		s.Since = said.FailedSince // failed by the fill: since that failure began
	case ok && said.State == s.State && !said.Since.IsZero():
		s.Since = said.Since
	}
	return s
}
