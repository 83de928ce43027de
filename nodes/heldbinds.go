package nodes

// heldBinds is what the mesh keeps of an assignment (any node's) for the
// consumers lists: the consumer and its provisions entries as far as they
// bind (SPEC §4.5). Only an assignment with a provisions entry is kept.
// A client reads every node's plans (§2.2): keeping each as an *Assignment
// (a whole Plan and each entry's nine strings) cost ~700 bytes an
// assignment, 34 MiB of a 20-module node's heap on a mesh of 50,000
// (BenchmarkBigMeshClient); this keeps the three names an entry binds by.
type heldBinds struct {
	node, module string
	binds        []heldBind
}

// heldBind is one provisions entry as it binds.
type heldBind struct{ provider, provision, local string }

// holdBinds is what asg binds (nil for nil, or for a plan that binds
// nothing).
func holdBinds(asg *Assignment) *heldBinds {
	if asg == nil || len(asg.Provisioning.Provisions) == 0 {
		return nil
	}
	h := &heldBinds{node: asg.Node, module: asg.Module, binds: make([]heldBind, len(asg.Provisioning.Provisions))}
	for i, p := range asg.Provisioning.Provisions {
		h.binds[i] = heldBind{provider: p.Provider, provision: p.Provision, local: p.Local}
	}
	return h
}

// is says whether the entry binds to provider/provision pk (neither name
// holds a "/": parseBindings refuses them), without building the pair.
func (b heldBind) is(pk string) bool {
	n := len(b.provider)
	return len(pk) == n+1+len(b.provision) && pk[n] == '/' && pk[:n] == b.provider && pk[n+1:] == b.provision
}
