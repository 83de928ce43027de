package graph

import "fmt"

// Key names a node: unique within a graph.
type Key struct {
	Kind string
	Name string
}

func (k Key) String() string { return k.Kind + ":" + k.Name }

// State is what a node knows of its value.
type State uint8

const (
	// Waiting: the value is not there yet; Why says what it waits for.
	Waiting State = iota
	// Ready: the value is there.
	Ready
	// Failed: the value cannot be computed; Why says why.
	Failed
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Ready:
		return "ready"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// WaitError is returned by a compute function whose node must wait.
type WaitError struct{ Why string }

func (e *WaitError) Error() string { return e.Why }

// Wait makes the error a compute function returns to say its node waits.
// Any other error fails the node.
func Wait(format string, args ...any) error {
	return &WaitError{Why: fmt.Sprintf(format, args...)}
}
