package daemon

import (
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// Explanation is /v1/explain's answer (and `graph explain --json`): a
// module of this node and, for each of its files, secret files and items,
// its state and — for one that waits or fails — the chain from it through
// each placeholder down to the inputs at the root. It never holds a value.
//
// The shape is stable: fields are only ever added. States are "met",
// "waiting" or "failed" (a module's: "applied", "waiting" or "failed").
type Explanation struct {
	Node    string    `json:"node"`
	Module  string    `json:"module"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`            // when the module entered State
	At      time.Time `json:"at"`               // when the daemon answered
	Reason  string    `json:"reason,omitempty"` // not applied: the reasons at the roots, joined
	Outputs []Output  `json:"outputs"`
	// Fill is set when the fill socket failed the module's last fill: every
	// value was there, the node-engine did not take the files.
	Fill *FillFailure `json:"fill,omitempty"`
}

// Output is one file, secret file or item of the module; or, when the plan
// or its templates archive is not usable yet, that input itself.
type Output struct {
	Kind       string    `json:"kind"` // file | secret-file | item | plan | archive
	Path       string    `json:"path,omitempty"`
	Collection string    `json:"collection,omitempty"` // item
	Secret     string    `json:"secret,omitempty"`     // secret-file: the secret's name (never its value)
	Where      string    `json:"where,omitempty"`      // plan, archive: where it comes from
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
	Why        string    `json:"why,omitempty"`  // not met: what it waits for or why it failed
	Root       bool      `json:"root,omitempty"` // the wait or failure began here
	// Chain: for an output not met, every placeholder it names (met ones
	// too) and every other input not met, each followed down to its roots.
	Chain []Step `json:"chain,omitempty"`
}

// Step is one node of a chain.
type Step struct {
	Node        string    `json:"node"` // the graph node's key, kind:name
	Kind        string    `json:"kind"` // need | config | placement | registry | vault | bound | bindings | collection | item | consumers | archive | plan | file | module
	Placeholder string    `json:"placeholder,omitempty"`
	Where       string    `json:"where,omitempty"` // where the value comes from, in words
	Bucket      string    `json:"bucket,omitempty"`
	Key         string    `json:"key,omitempty"`
	Vault       string    `json:"vault,omitempty"` // a vault name (never a value)
	Collection  string    `json:"collection,omitempty"`
	Contributor string    `json:"contributor,omitempty"` // item: the module contributing it
	State       string    `json:"state"`
	Since       time.Time `json:"since"`          // when the node entered its state (or said a new reason)
	Why         string    `json:"why,omitempty"`  // not met: what it waits for or why it failed; for a vault name, the last ask and its outcome
	Root        bool      `json:"root,omitempty"` // the wait or failure began here
	Input       bool      `json:"input,omitempty"`
	Secret      bool      `json:"secret,omitempty"`
	Inputs      []Step    `json:"inputs,omitempty"` // the inputs not met, followed down
}

// FillFailure says the fill socket failed the module's last fill.
type FillFailure struct {
	Socket string    `json:"socket"`
	Why    string    `json:"why"`
	Since  time.Time `json:"since"`
}

// explain builds module's explanation; nil when it is not on this node.
func (d *Daemon) explain(module string) *Explanation {
	mn := d.mesh.ModuleNode(module)
	v := d.mesh.View(module)
	if mn == nil || v == nil {
		return nil
	}
	e := &Explanation{Node: d.cfg.Node, Module: module, At: time.Now(), Outputs: []Output{}}
	e.State, e.Reason, e.Since = d.moduleState(v)
	if said, ok := d.out.Said(module); ok && said.Failure != "" && v.State == graph.Ready {
		e.Fill = &FillFailure{Socket: d.cfg.FillSocket, Why: said.Failure, Since: e.Since}
	}
	g := d.mesh.Graph()
	meta := func(n *graph.Node) any {
		if o := nodes.OriginOf(n); o != nil {
			return o
		}
		return nil
	}
	var head []Output
	for _, in := range mn.Inputs() {
		o := nodes.OriginOf(in)
		if o == nil {
			o = &nodes.Origin{}
		}
		switch k := in.Key().Kind; k {
		case nodes.KindFile, nodes.KindItem:
			x, err := g.Explain(in.Key(), meta)
			if err != nil {
				continue
			}
			out := Output{Kind: "file", Path: o.Path, State: stepState(in.State()), Since: in.Since(), Root: x.Root}
			if k == nodes.KindItem {
				out.Kind, out.Path, out.Collection = "item", "", o.Collection
			} else if strings.HasPrefix(o.Placeholder, "${secret:") {
				out.Kind, out.Secret = "secret-file", strings.TrimSuffix(strings.TrimPrefix(o.Placeholder, "${secret:"), "}")
			}
			if in.State() != graph.Ready {
				out.Why = d.mesh.RootReason(in)
				for _, ix := range x.Inputs {
					if ix.Key.Kind == nodes.KindNeed || ix.State != graph.Ready.String() {
						out.Chain = append(out.Chain, toStep(ix))
					}
				}
			}
			e.Outputs = append(e.Outputs, out)
		case nodes.KindPlan, nodes.KindArchive:
			if in.State() != graph.Ready {
				st := toStep(graph.Explanation{Key: in.Key(), State: in.State().String(), Why: in.Why(), Meta: meta(in)})
				head = append(head, Output{Kind: k, Where: st.Where, State: st.State, Since: in.Since(), Why: in.Why(), Root: true})
			}
		}
	}
	if len(e.Outputs) == 0 { // no file yet: the plan or the archive says why
		e.Outputs = append(e.Outputs, head...)
	}
	return e
}

// toStep turns the engine's explanation of a node into a step, keeping
// below it only the inputs that are not met.
func toStep(x graph.Explanation) Step {
	s := Step{Node: x.Key.String(), Kind: x.Key.Kind, State: explState(x.State), Since: x.Since,
		Root: x.Root, Input: x.Input, Secret: x.Secret}
	if s.State != "met" {
		s.Why = x.Why
	}
	o, _ := x.Meta.(*nodes.Origin)
	if o == nil {
		o = &nodes.Origin{}
	}
	name := x.Key.Name
	switch x.Key.Kind {
	case nodes.KindNeed:
		s.Placeholder = o.Placeholder
		s.Where = o.Placeholder
	case nodes.KindConfig, nodes.KindBound:
		s.Bucket, s.Key = o.Bucket, o.Key
		s.Where = o.Bucket + " " + o.Key
	case nodes.KindRegistry:
		s.Bucket, s.Key = nodes.RegistryBucket, name
		s.Where = nodes.RegistryBucket + " " + name
	case nodes.KindPlacement:
		s.Bucket, s.Key = o.Bucket, o.Key
		field := name
		if i := strings.Index(name, "/"); i >= 0 {
			field = name[i+1:]
		}
		s.Where = o.Bucket + " " + o.Key + " placement." + field
	case nodes.KindPlan:
		s.Bucket, s.Key = o.Bucket, o.Key
		s.Where = o.Bucket + " " + o.Key
	case nodes.KindArchive:
		s.Key = o.Key
		s.Where = "templates archive " + o.Key
	case nodes.KindVault:
		s.Vault = name
		s.Where = "vault " + name
	case nodes.KindBindings:
		s.Bucket = nodes.AssignmentsBucket
		s.Where = nodes.AssignmentsBucket + " (the consumers bound to " + name + ")"
	case nodes.KindCollection:
		s.Collection, s.Bucket = name, nodes.CollectBucket
		s.Where = "collection " + name
	case nodes.KindItem:
		s.Collection, s.Contributor = o.Collection, o.Module
		s.Where = "item " + o.Collection + " of contributor " + o.Module
	case nodes.KindConsumers:
		s.Where = "consumers of " + name
	case nodes.KindFile:
		s.Where = "file " + o.Path + " of " + o.Module
	case nodes.KindModule:
		s.Where = "module " + name
	default:
		s.Where = x.Key.String()
	}
	for _, in := range x.Inputs {
		if in.State != graph.Ready.String() {
			s.Inputs = append(s.Inputs, toStep(in))
		}
	}
	return s
}

func stepState(s graph.State) string { return explState(s.String()) }

func explState(s string) string {
	if s == graph.Ready.String() {
		return "met"
	}
	return s
}
