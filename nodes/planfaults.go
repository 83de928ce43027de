package nodes

import (
	"cmp"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
)

// placeholderFaults are the placeholders a module's plan itself makes
// impossible (a secret it does not declare, consumers of a provision it
// does not provide, an item naming a secret, a bound provision or a
// collection it does not list, a kind this client does not fill), each
// with what the module's reason says of it, once per template naming it.
// Each is a need of the needs bucket, failed, while the plan stands (SPEC
// §5.2): a fleet operator, and the server's sweep, see which need failed
// the module.
type placeholderFaults map[Placeholder][]string

func (f placeholderFaults) add(ph Placeholder, why string) {
	if !slices.Contains(f[ph], why) {
		f[ph] = append(f[ph], why)
	}
}

// needs are the faults as failed needs, by kind then name (as View lists
// needs); nil when there are none.
func (f placeholderFaults) needs() []NeedView {
	if len(f) == 0 {
		return nil
	}
	out := make([]NeedView, 0, len(f))
	for ph, whys := range f {
		out = append(out, NeedView{Kind: string(ph.Kind), Name: ph.Name, State: graph.Failed, Why: strings.Join(whys, "; ")})
	}
	slices.SortFunc(out, func(a, b NeedView) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return out
}
