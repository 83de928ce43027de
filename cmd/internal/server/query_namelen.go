package server

import (
	"fmt"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A request's narrowing names are bounded as a key's tokens are: a name
// over spec.MaxNameBytes encoded is in no key in shape (decodeShape says a
// key bearing one is out of shape), and one of a few hundred kilobytes
// made a watch filter, a JetStream consumer, and an error quoting it twice
// too large for the bus, so the requester heard nothing at all (an outside
// audit: `{"what":"needs","node":"a"*600000}` timed out). Such a name is
// refused at once, named by its field with the bound, and quoted cut.

// checkNameLens says which of req's narrowing fields is over
// spec.MaxNameBytes encoded, nil when none is.
func checkNameLens(req Request) error {
	for _, f := range []struct{ field, name string }{
		{"node", req.Node}, {"module", req.Module}, {"contributor", req.Contributor}, {"collection", req.Collection},
	} {
		if why := spec.CheckNameLen(f.field, f.name); why != "" {
			return fmt.Errorf("%s, the most a key's token holds: %s", why, quoted(f.name))
		}
	}
	return nil
}
