package control

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// ModuleState is what the daemon says of a module beyond its graph: the
// state its report says (or will say at the end of the batch).
type ModuleState struct {
	State  string // applied | waiting | failed
	Reason string
	Since  time.Time
	// Fill is the fill socket's failure of the module's last fill ("" for
	// none): every value was there, the node-engine did not take the files.
	Fill string
}

// Answers builds the control socket's answers from the mesh of node. Its
// methods read the graph: call them on the daemon's loop.
type Answers struct {
	Node       string
	FillSocket string
	Graph      *nodes.NodeGraph
	// State is what the daemon says of the module v is the view of.
	State func(v *nodes.ModuleView) ModuleState
	// Removing lists the modules taken off whose removal the node-engine
	// has not answered yet (nil: none).
	Removing func() []string
}

// StateWord is the word a module's report says for the view's state s.
func StateWord(s graph.State) string {
	if s == graph.Ready {
		return "applied"
	}
	return s.String()
}

// Modules is /v1/modules' answer.
func (a Answers) Modules() Modules {
	out := Modules{Node: a.Node, At: time.Now(), Modules: []ModuleStatus{}}
	if a.Removing != nil {
		out.Removing = a.Removing()
	}
	for _, name := range a.Graph.Modules() {
		v := a.Graph.View(name)
		st := a.State(v)
		ms := ModuleStatus{Module: name, Files: len(v.Files), State: st.State, Reason: shown(st.Reason), Since: st.Since}
		for _, f := range v.Files {
			if f.State == graph.Ready {
				ms.FilesMet++
			}
		}
		switch ms.State {
		case "waiting":
			ms.Waiting = stage.WaitingOf(v)
		case "failed":
			ms.Waiting = stage.StillWaiting(v) // what else it waits for, as its report says
		}
		for i := range ms.Waiting {
			ms.Waiting[i].Why = report.Bound(ms.Waiting[i].Why)
		}
		out.Modules = append(out.Modules, ms)
	}
	return out
}

// DOT is /v1/graph.dot's graph (all of it when module is ""; here is
// false when module is not on this node): each module drawn in the state
// its report says (State), so one whose fill failed is red, not the green
// of a graph that has every value.
func (a Answers) DOT(module string) (out []byte, here bool, err error) {
	said := func(name string) (graph.State, bool) {
		v := a.Graph.ViewLean(name)
		if v == nil || a.State == nil {
			return graph.Waiting, false
		}
		switch a.State(v).State {
		case "applied":
			return graph.Ready, true
		case "failed":
			return graph.Failed, true
		}
		return graph.Waiting, true
	}
	if n := a.Graph.GraphLen(); module == "" && n > MaxWholeDOT {
		return nil, true, &TooBigToDraw{Nodes: n}
	}
	return a.Graph.DOTSaid("provisioner", module, said)
}

// MaxWholeDOT is the most nodes of the engine's graph drawn whole (the
// drawing folds some, so it may show fewer or, with a module's box and
// states, a few more). The drawing is made on the daemon's loop, which
// fills nothing meanwhile: an outside audit's 10,000-file node (165,000
// nodes, 44 MB of DOT, which no layout program draws) held every fill
// 3-6 s per drawing and the client's memory at four times its own for
// minutes, and one of 20,000 held them 0.25-0.6 s at every poll of a
// dashboard. 5,000 (some 700 files) take about 0.1 s; a module's part is
// drawn at any size.
const MaxWholeDOT = 5000

// TooBigToDraw is the whole graph over MaxWholeDOT nodes.
type TooBigToDraw struct{ Nodes int }

func (e *TooBigToDraw) Error() string {
	return fmt.Sprintf("the graph holds %d nodes, over the %d drawn whole (drawing it holds every fill): draw one module's part with graph dot --module M (/v1/graph.dot?module=M)", e.Nodes, MaxWholeDOT)
}

// NotHere is the 404 answer for module, which is not on this node's
// graph. A module assigned to the node without a provisioning plan (SPEC
// §3 r2) is said to be that, as prov.ask says it (outputs/ask): "not on
// node" would send the operator looking for an assignment that is there.
func (a Answers) NotHere(module string) ErrorBody {
	mods := a.Graph.Modules()
	here := "no module is assigned to node " + a.Node
	if len(mods) > 0 {
		here = "modules on node " + a.Node + ": " + namedSome(mods)
	}
	if module == "" {
		return ErrorBody{Error: "no module named; " + here, Node: a.Node, Modules: mods}
	}
	if a.Graph.AssignedWithoutPlan(module) {
		return ErrorBody{Error: "module " + module + " is assigned to node " + a.Node +
			` without a provisioning plan (its assignment carries no "provisioning"): the provisioner fills nothing for it; ` + here,
			Node: a.Node, Modules: mods}
	}
	if d, err := spec.DecodeToken(module); err == nil && d != module && (slices.Contains(mods, d) || a.Graph.AssignedWithoutPlan(d)) {
		// the name as a bus key writes it (ace.web=2Ev2 for web.v2),
		// copied from `nats kv ls`: say the module's name
		return ErrorBody{Error: "module " + module + " is not on node " + a.Node + ": " + module + " is how bus keys write module " + d +
			" (SPEC §2.1), which is: name it " + d + "; " + here, Node: a.Node, Modules: mods}
	}
	return ErrorBody{Error: "module " + module + " is not on node " + a.Node + "; " + here, Node: a.Node, Modules: mods}
}

// namedInError is how many module names an error's text lists: a node of
// a thousand modules made a mistyped name's error one line of 12 KB (an
// outside audit); the answer's JSON lists them all.
const namedInError = 20

// namedSome lists mods, the first namedInError of them when there are
// more, saying how many more.
func namedSome(mods []string) string {
	if len(mods) <= namedInError {
		return strings.Join(mods, ", ")
	}
	return fmt.Sprintf("%s and %d more (status lists them)", strings.Join(mods[:namedInError], ", "), len(mods)-namedInError)
}

// Explain builds module's explanation; nil when it is not on this node.
func (a Answers) Explain(module string) *Explanation {
	mn := a.Graph.ModuleNode(module)
	v := a.Graph.View(module)
	if mn == nil || v == nil {
		return nil
	}
	e := &Explanation{Node: a.Node, Module: module, At: time.Now(), Outputs: []Output{}}
	st := a.State(v)
	e.State, e.Reason, e.Since = st.State, shown(st.Reason), st.Since
	if st.Fill != "" {
		e.Fill = &FillFailure{Socket: a.FillSocket, Why: shown(st.Fill), Since: e.Since}
	}
	g := a.Graph.Graph()
	meta := func(n *graph.Node) any {
		if o := nodes.OriginOf(n); o != nil {
			return o
		}
		return nil
	}
	var head, secrets []Output
	for _, in := range mn.Inputs() {
		o := nodes.OriginOf(in)
		switch k := in.Key().Kind; k {
		case nodes.KindFile, nodes.KindItem:
			x, err := g.Explain(in.Key(), meta)
			if err != nil {
				continue
			}
			out := Output{Kind: "file", State: stepState(in.State().String()), Since: in.Since(), Root: x.Root}
			if o != nil {
				out.Path = o.Path
			}
			if k == nodes.KindItem {
				out.Kind, out.Path = "item", ""
				if o != nil {
					out.Collection = o.Collection
				}
			} else if name := o.SecretName(); name != "" {
				out.Kind, out.Secret = "secret-file", name
				out.Asked = a.asked(in)
			}
			if in.State() != graph.Ready {
				out.Why = shown(a.Graph.RootReason(in))
				for _, ix := range x.Inputs {
					if ix.Key.Kind == nodes.KindNeed || ix.State != graph.Ready.String() {
						out.Chain = append(out.Chain, toStep(judged(g, a.unfold(ix), meta)))
					}
				}
			} else {
				out.Chain = append(judgedBindings(g, in, meta), leftOut(a.Graph, in)...)
			}
			e.Outputs = append(e.Outputs, out)
		case nodes.KindNeed:
			// A secret the plan declares that no file names (the module
			// waits for it all the same): said while it is not met, down
			// to its vault name, as a file's placeholder is.
			if in.State() == graph.Ready {
				continue
			}
			out := Output{Kind: "secret", Secret: o.SecretName(), State: stepState(in.State().String()), Since: in.Since(),
				Why: shown(a.Graph.RootReason(in))}
			if x, err := g.Explain(in.Key(), meta); err == nil {
				for _, ix := range x.Inputs {
					if ix.State != graph.Ready.String() {
						out.Chain = append(out.Chain, toStep(ix))
					}
				}
			}
			secrets = append(secrets, out)
		case nodes.KindPlan, nodes.KindArchive:
			if in.State() != graph.Ready {
				out := Output{Kind: k, Where: o.Source(in.Key()).Where, State: stepState(in.State().String()),
					Since: in.Since(), Why: shown(in.Why()), Root: true}
				if k == nodes.KindArchive {
					out.Asked = a.Graph.ArchiveTried(module)
				}
				head = append(head, out)
			}
		}
	}
	if len(e.Outputs) == 0 { // no file yet: the plan or the archive says why
		e.Outputs = append(e.Outputs, head...)
	}
	e.Outputs = append(e.Outputs, secrets...)
	for i := range e.Outputs {
		a.stampAsked(e.Outputs[i].Chain)
	}
	return e
}

// stampAsked says on each vault name in steps (and below) when it was last
// asked, and on each templates archive when its fetch was last tried: what
// was last tried (SPEC §5.5), kept out of its reason.
func (a Answers) stampAsked(steps []Step) {
	for i := range steps {
		switch s := &steps[i]; {
		case s.Kind == nodes.KindVault && s.Vault != "":
			s.Asked = a.Graph.SecretLastAsked(s.Vault)
		case s.Kind == nodes.KindArchive && s.State != "met":
			s.Asked = a.Graph.ArchiveTried(strings.TrimPrefix(s.Node, nodes.KindArchive+":"))
		}
		a.stampAsked(steps[i].Inputs)
	}
}

// asked is when the ask was made whose answer a secret's file holds: that
// of the vault name below its need (zero when none is held).
func (a Answers) asked(file *graph.Node) time.Time {
	for _, need := range file.Inputs() {
		if need.Key().Kind != nodes.KindNeed {
			continue
		}
		for _, in := range need.Inputs() {
			if k := in.Key(); k.Kind == nodes.KindVault {
				return a.Graph.SecretAsked(k.Name)
			}
		}
	}
	return time.Time{}
}

// unfold shows below a config need that is not met the input it stands
// for (nodes.NodeGraph.Behind): the config key or the registry's entry, as
// when each was a node of its own, so the chain still ends where the value
// comes from.
func (a Answers) unfold(x graph.Explanation) graph.Explanation {
	if x.Key.Kind != nodes.KindNeed || !x.Input || x.State == graph.Ready.String() {
		return x
	}
	n := a.Graph.Graph().Node(x.Key)
	if n == nil {
		return x
	}
	k, o, ok := a.Graph.Behind(n)
	if !ok {
		return x
	}
	leaf := graph.Explanation{Key: k, State: x.State, Why: x.Why, Root: x.Root, Input: true,
		Since: x.Since, ChangedAt: x.ChangedAt, Meta: o}
	x.Root, x.Input, x.Cause, x.Inputs = false, false, nil, []graph.Explanation{leaf}
	return x
}

// toStep turns the engine's explanation of a node into a step, keeping
// below it only the inputs that are not met.
func toStep(x graph.Explanation) Step {
	o, _ := x.Meta.(*nodes.Origin)
	src := o.Source(x.Key)
	s := Step{Node: x.Key.String(), Kind: x.Key.Kind, State: stepState(x.State), Since: x.Since,
		Root: x.Root, Input: x.Input, Secret: x.Secret,
		Placeholder: src.Placeholder, Where: src.Where, Bucket: src.Bucket, Key: src.Key, Vault: src.Vault,
		Collection: src.Collection, Contributor: src.Contributor}
	if s.State != "met" {
		s.Why = shown(x.Why)
	}
	for _, in := range x.Inputs {
		if in.State != graph.Ready.String() || in.Key.Kind == nodes.KindOffer {
			s.Inputs = append(s.Inputs, toStep(in))
		}
	}
	return s
}

// judged adds to a met binding's explanation how it was judged: the offer
// node it reads (SPEC §4.6), which a met node's explanation leaves out.
func judged(g *graph.Graph, x graph.Explanation, meta func(*graph.Node) any) graph.Explanation {
	n := g.Node(x.Key)
	if n == nil || x.State != graph.Ready.String() {
		return x
	}
	for _, in := range n.Inputs() {
		if in.Key().Kind == nodes.KindOffer {
			if ox, err := g.Explain(in.Key(), meta); err == nil {
				x.Inputs = append(x.Inputs, ox)
			}
		}
	}
	return x
}

// judgedBindings are the steps of a met file's bindings, each saying how
// it was judged; nil for a file that reads none.
func judgedBindings(g *graph.Graph, file *graph.Node, meta func(*graph.Node) any) []Step {
	var out []Step
	for _, in := range file.Inputs() {
		if in.Key().Kind != nodes.KindNeed || !strings.Contains(in.Key().Name, "${bound:") {
			continue
		}
		if x, err := g.Explain(in.Key(), meta); err == nil {
			out = append(out, toStep(judged(g, x, meta)))
		}
	}
	return out
}

// leftOut are the steps of the consumers a met file's consumers lists
// leave out (nodes.ConsumersLeftOut), each a vault name with why.
func leftOut(m *nodes.NodeGraph, file *graph.Node) []Step {
	var out []Step
	for _, lo := range m.ConsumersLeftOut(file) {
		out = append(out, Step{Node: lo.Leaf.Key().String(), Kind: nodes.KindVault, Vault: lo.Vault,
			State: stepState(lo.Leaf.State().String()), Since: lo.Leaf.Since(), Input: true, Root: true,
			Why: "left out of the consumers list: " + shown(lo.Why)})
	}
	return out
}

// stepState is the word of an explanation for the engine's state s.
func stepState(s string) string {
	if s == graph.Ready.String() {
		return "met"
	}
	return s
}
