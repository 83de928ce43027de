package daemon

import (
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// event is what the loop takes in from the other goroutines. The set is
// closed (the method is unexported): the loop's switch names every kind,
// and anything else does not compile rather than being dropped.
type event interface{ isEvent() }

// busUpdate is one watch's update.
type busUpdate struct{ bus.Update }

// filled is a fill's or DELETE's outcome, from the request's goroutine
// (the stage sends them off the loop): the loop hands it to the stage.
type filled struct{ stage.Done }

func (busUpdate) isEvent()     {}
func (filled) isEvent()        {}
func (secretChanged) isEvent() {}
func (reconnected) isEvent()   {}
func (call) isEvent()          {}
