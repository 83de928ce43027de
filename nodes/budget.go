package nodes

import (
	"fmt"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module's templated files go to the node-engine in one request, which
// takes about spec.MaxModuleRenderedBytes of files (SPEC §4.3 whole-module
// requests; each file alone is bounded at 16 MiB, §4.1), and one
// stabilization renders every file it makes dirty before the stage takes
// any. Unbounded, a plan under 1 MB of 10,000 files naming one value of a
// few MB rendered tens of gigabytes at once before the stage found the
// module too large to send, and the client was killed for its memory:
// every module of the node went with it (house rule: a broken plan fails
// that module alone). So a module's templated files render within a
// budget: a file whose bytes would take the module's files together past
// the limit fails, naming it, and is not rendered; the module fails with
// it, as it would have when sent. When the module's files shrink later, a
// file refused so is rendered again (Stabilize: retryBudgets).

// renderBudget is one wiring of a module's templated files: the sizes of
// their last values.
type renderBudget struct {
	total int         // the sizes of the files' last values, together
	files []*fileNode // the module's templated files, for retryBudgets
	nodes []*graph.Node
	over  bool       // a file was refused since the last retryBudgets
	m     *NodeGraph // whose overBudget lists it once over
	// fresh: over for the first time since its last count; shrunk: a
	// file of it was made smaller, or failed, since. Only then is it
	// counted again (retryBudgets): a module that stays over costs a
	// change elsewhere nothing.
	fresh, shrunk bool
}

// admit says whether file f may be size bytes now (its own last size
// given back first); the error names the limit.
func (b *renderBudget) admit(f *fileNode, size int) error {
	if b == nil || b.total-int(f.size)+size <= spec.MaxModuleRenderedBytes {
		return nil
	}
	return &overBudgetError{fmt.Sprintf("template %s: the module's files together would be over %d bytes (64 MiB, MaxModuleRenderedBytes: what one fill request takes) with this file's %d",
		f.r.t.Name, spec.MaxModuleRenderedBytes, size)}
}

// overBudgetError is a file the module's budget refused; it is a limit
// (ErrLimit).
type overBudgetError struct{ msg string }

func (e *overBudgetError) Error() string { return e.msg + " (" + ErrLimit.Error() + ")" }
func (e *overBudgetError) Unwrap() error { return ErrLimit }

// took records file f's size after a render (0 when it failed); refused
// says the budget refused it, for want bytes.
func (b *renderBudget) took(f *fileNode, size, want int, refused bool) {
	if b == nil {
		return
	}
	if size < int(f.size) {
		b.shrunk = true
	}
	b.total += size - int(f.size)
	f.size, f.want = int32(size), 0
	if refused {
		f.want = int32(want)
		if !b.over {
			b.over, b.fresh = true, true
			b.m.overBudget = append(b.m.overBudget, b)
		}
	}
}

// retryBudgets makes each file a budget refused render again when it now
// fits: the module's total is counted again from the files' values
// (a file whose inputs went waiting has no value, and was not told), and
// each refused file whose bytes fit is marked to be rendered. It says
// whether any was.
func (m *NodeGraph) retryBudgets() bool {
	again := false
	over := m.overBudget
	m.overBudget = nil
	for _, b := range over {
		if m.budgetGone(b) {
			continue // the module was wired again (or left): a new budget
		}
		if !b.fresh && !b.shrunk {
			m.overBudget = append(m.overBudget, b) // nothing freed since its last count
			continue
		}
		b.over, b.fresh, b.shrunk, b.total = false, false, false, 0
		for i, f := range b.files {
			f.size = 0
			if v, ok := b.nodes[i].Value().(*FileValue); ok && b.nodes[i].State() == graph.Ready {
				f.size = v.size
			}
			b.total += int(f.size)
		}
		for i, f := range b.files {
			if f.want > 0 && b.total+int(f.want) <= spec.MaxModuleRenderedBytes {
				m.g.SetCompute(b.nodes[i], f.render)
				// Reserved: the next one must fit beside it, and its render
				// gives the reservation back (took).
				b.total += int(f.want)
				f.size = f.want
				again = true
			} else if f.want > 0 && !b.over {
				b.over = true // still refused: looked at again after the next stabilization
				m.overBudget = append(m.overBudget, b)
			}
		}
	}
	return again
}

// budgetGone says b is no module's budget any more: its files were wired
// again (a new fileNode each, a new budget) or taken out of the graph.
func (m *NodeGraph) budgetGone(b *renderBudget) bool {
	return len(b.files) == 0 || b.nodes[0].Meta != any(b.files[0]) || m.g.Node(b.nodes[0].Key()) != b.nodes[0]
}
