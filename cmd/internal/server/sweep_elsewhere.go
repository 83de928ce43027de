package server

import (
	"fmt"
	"sort"
	"strings"
)

// nodesNamed is how many of the other nodes a module is assigned on an
// orphan's why names.
const nodesNamed = 3

// whyUnassigned is why the keys of module on a node it is not assigned
// to are orphans: "module assigned nowhere" (SPEC §6.2's words) when no
// node holds it with a plan, else the nodes that do, the first nodesNamed
// in byte order ("module assigned on other nodes only (g14, h1 and 2
// more)"), so an operator cleaning up after a move is not sent looking for
// a module the controller removed. A node that holds it without a plan
// does not count: the module is not the provisioner's there.
func (s *sweeper) whyUnassigned(module string) string {
	if s.onNodes == nil {
		s.onNodes = map[string][]string{}
		for nm, a := range s.plans {
			if a.plan {
				s.onNodes[nm.Module] = append(s.onNodes[nm.Module], nm.Node)
			}
		}
		for _, nodes := range s.onNodes {
			sort.Strings(nodes)
		}
	}
	nodes := s.onNodes[module]
	if len(nodes) == 0 {
		return "module assigned nowhere"
	}
	named := strings.Join(nodes[:min(len(nodes), nodesNamed)], ", ")
	if more := len(nodes) - nodesNamed; more > 0 {
		named += fmt.Sprintf(" and %d more", more)
	}
	return "module assigned on other nodes only (" + named + ")"
}
