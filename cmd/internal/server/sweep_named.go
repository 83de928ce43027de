package server

import "github.com/novox/mesh-provisioner/nodes/spec"

// A sweep narrowed to a node or module (mesh-provisioner sweep --node N,
// --module M) that names nothing the mesh knows is a name mistyped, not a
// mesh with nothing held back: a cron job whose sweep passes for ever on a
// typo watches nothing. The sweep says so in NothingNamed (an addition to
// SPEC §6.2's reply, on every page), and the command says it on stderr;
// its exit status stays SPEC §6.2's (the sweep was made). Known is: an assignment of that name (with a
// plan or without), or a key of the needs, applied or collect bucket
// bearing it (orphans included: their sweep is a real one). Nothing is
// said when the sweep could not tell: the assignments bucket missing, or
// a bucket the bus refuses the server.

// nothingNamed is why the sweep's narrowing names nothing (empty when it
// names something, or is none, or the sweep cannot tell); keysNamed says
// whether a key of the needs, applied or collect bucket bears the name.
func (s *sweeper) nothingNamed(keysNamed bool) string {
	node, module := s.p.Node, s.p.Module
	if node == "" && module == "" || keysNamed || !s.assignments || len(s.res.reply.UnreadableBuckets) > 0 {
		return ""
	}
	for nm := range s.plans {
		if (node == "" || nm.Node == node) && (module == "" || nm.Module == module) {
			return ""
		}
	}
	var why string
	switch {
	case module == "":
		why = "no module is assigned to node " + node + " and no key names it"
	case node == "":
		why = "no module " + module + " is assigned anywhere and no key names it"
	default:
		why = "no module " + module + " is assigned to node " + node + " and no key names it"
	}
	return why + givenEncoded(node) + givenEncoded(module)
}

// givenEncoded says, for a name that reads as the key token of another
// (a=2Eb, copied off a bucket's keys), which name that is: names are
// given as they are, and the token is encoded again (SPEC §2.1).
func givenEncoded(name string) string {
	if decoded, ok := spec.GivenEncoded(name); ok {
		return "; " + name + " is the key token of " + decoded + ": names are given as they are, not encoded"
	}
	return ""
}

// noPlan says that the sweep's narrowing names no module assigned with a
// provisioning plan (empty when it names one, or is none, or the sweep
// cannot tell, or nothingNamed already says that it names nothing): its
// modules are assigned without a plan, or only keys bear the name
// (orphans). Derived from the assignments read, not from the counts:
// `mesh-provisioner sweep` said it whenever every count was zero, so of
// a node whose one module's report was out of shape (counted nowhere then)
// it said no module was assigned.
func (s *sweeper) noPlan() string {
	node, module := s.p.Node, s.p.Module
	if node == "" && module == "" || !s.assignments || len(s.res.reply.UnreadableBuckets) > 0 || s.res.reply.NothingNamed != "" {
		return ""
	}
	for nm, a := range s.plans {
		if a.plan && (node == "" || nm.Node == node) && (module == "" || nm.Module == module) {
			return ""
		}
	}
	return "no module with a provisioning plan is assigned to " + narrowed(node, module)
}

// narrowed says which part of the mesh a sweep was narrowed to.
func narrowed(node, module string) string {
	switch {
	case node != "" && module != "":
		return "node " + node + " as module " + module
	case node != "":
		return "node " + node
	default:
		return "any node as module " + module
	}
}
