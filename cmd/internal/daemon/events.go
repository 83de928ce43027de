package daemon

// event is what the loop takes in from the other goroutines. The set is
// closed (the method is unexported): the loop's switch names every kind,
// and anything else does not compile rather than being dropped.
type event interface{ isEvent() }

func (secretChanged) isEvent() {}
func (reconnected) isEvent()   {}
func (call) isEvent()          {}
