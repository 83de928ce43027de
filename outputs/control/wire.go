package control

import (
	"time"

	"github.com/novox/mesh-provisioner/outputs/report"
)

// The control socket: HTTP on a unix socket, mode 0600, that answers only
// peers running as the daemon's uid or root.
//
//	GET /healthz              200 "ok" once the bus is connected and the initial load is done and while the
//	                          fill socket answers, else 503 saying which (a silent vault is no 503)
//	GET /v1/modules           Modules (JSON)
//	GET /v1/explain?module=M  Explanation (JSON); 404 ErrorBody when M is not on this node, 400 when no M is named
//	GET /v1/graph.dot[?module=M]  the graph in Graphviz DOT (text/vnd.graphviz); led by a comment
//	                          "// not ready: <why>" when the client is not ready
//	GET /metrics              Prometheus text format
//
// Every error is an ErrorBody (JSON) with a status code; a query that does
// not parse or names more than one module is a 400 (moduleParam).

// Modules is /v1/modules' answer: every module of this node. Every field
// is there in every state, a list [] and a text "" when there is nothing
// to say, as in Explanation.
type Modules struct {
	Node    string         `json:"node"`
	At      time.Time      `json:"at"` // when the daemon answered
	Modules []ModuleStatus `json:"modules"`
	// NotReady is why the client is not ready (/healthz's reasons: the bus
	// not connected, the initial load not done, …); none when it is. A
	// client that has not read its modules yet lists none: this says so.
	NotReady []string `json:"not_ready"`
	// Removing: the modules taken off this node whose removal the
	// node-engine has not answered yet (SPEC §4.7: tried again at every
	// tick): their files are still on disk.
	Removing []string `json:"removing"`
}

// ModuleStatus is one module of /v1/modules.
type ModuleStatus struct {
	Module   string    `json:"module"`
	State    string    `json:"state"`     // applied | waiting | failed
	Files    int       `json:"files"`     // files of the plan (secret files included)
	FilesMet int       `json:"files_met"` // of them, those whose every value is there
	Since    time.Time `json:"since"`     // when the module entered State
	Reason   string    `json:"reason"`
	// Waiting is what a waiting module waits for, or what else a failed
	// one waits for, as its report's "waiting" says it (each why cut as
	// there; the list is not).
	Waiting []report.Waiting `json:"waiting"`
}

// ErrorBody is the body of every control socket answer that is not 200.
type ErrorBody struct {
	Error   string   `json:"error"`
	Node    string   `json:"node,omitempty"`
	Modules []string `json:"modules,omitempty"` // a module not here: the modules that are
}

// Explanation is /v1/explain's answer (and `graph explain --json`): a
// module of this node and, for each of its files, secret files and items,
// its state and — for one that waits or fails — the chain from it through
// each placeholder down to the inputs at the root. It never holds a value.
//
// The shape is stable: fields are only ever added, and every field is
// there in every state (a list [] and a text "" when there is nothing to
// say; fill null unless the fill socket failed the module), but asked,
// there only once something was asked or tried: `jq '.outputs[].chain[]'`
// works on any module. States are "met",
// "waiting" or "failed" (a module's: "applied", "waiting" or "failed").
type Explanation struct {
	Node    string    `json:"node"`
	Module  string    `json:"module"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`  // when the module entered State
	At      time.Time `json:"at"`     // when the daemon answered
	Reason  string    `json:"reason"` // not applied: the reasons at the roots, joined
	Outputs []Output  `json:"outputs"`
	// Fill is set when the fill socket failed the module's last fill: every
	// value was there, the node-engine did not take the files.
	Fill *FillFailure `json:"fill"`
	// NotReady is why the client is not ready, as in Modules: with the bus
	// away, what it says is what it last knew, and nothing moves until
	// the bus is back.
	NotReady []string `json:"not_ready"`
}

// Output is one file, secret file or item of the module; or, when the plan
// or its templates archive is not usable yet, that input itself; or, while
// it is not met, a secret the plan declares that no file names (the module
// waits for it all the same).
type Output struct {
	Kind       string    `json:"kind"` // file | secret-file | item | plan | archive | secret
	Path       string    `json:"path"`
	Collection string    `json:"collection"`     // item
	Secret     string    `json:"secret"`         // secret-file, secret: the secret's name (never its value)
	Asked      time.Time `json:"asked,omitzero"` // secret-file, met: when the ask its value answered was made; archive, not met: when its fetch was last tried
	Where      string    `json:"where"`          // plan, archive: where it comes from
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
	Why        string    `json:"why"`  // not met: what it waits for or why it failed
	Root       bool      `json:"root"` // the wait or failure began here
	// Chain: for an output not met, every placeholder it names (met ones
	// too) and every other input not met, each followed down to its roots.
	Chain []Step `json:"chain"`
}

// Step is one node of a chain.
type Step struct {
	Node        string    `json:"node"` // the graph node's key, kind:name
	Kind        string    `json:"kind"` // need | config | placement | registry | vault | bound | bindings | offers | offer | collection | item | consumers | archive | plan | file | module
	Placeholder string    `json:"placeholder"`
	Where       string    `json:"where"` // where the value comes from, in words
	Bucket      string    `json:"bucket"`
	Key         string    `json:"key"`
	Vault       string    `json:"vault"` // a vault name (never a value)
	Collection  string    `json:"collection"`
	Contributor string    `json:"contributor"` // item: the module contributing it
	State       string    `json:"state"`
	Since       time.Time `json:"since"`          // when the node entered its state (or said a new reason)
	Why         string    `json:"why"`            // not met: what it waits for or why it failed; for a vault name, the outcome of its last ask
	Asked       time.Time `json:"asked,omitzero"` // a vault name: when it was last asked; an archive not met: when its fetch was last tried
	Root        bool      `json:"root"`           // the wait or failure began here
	Input       bool      `json:"input"`
	Secret      bool      `json:"secret"`
	Inputs      []Step    `json:"inputs"` // the inputs not met, followed down
}

// fillLists makes every list of e that is nil empty, so that its JSON
// holds [] there, never null (the shape every state has).
func (e *Explanation) fillLists() {
	if e.NotReady == nil {
		e.NotReady = []string{}
	}
	if e.Outputs == nil {
		e.Outputs = []Output{}
	}
	for i := range e.Outputs {
		e.Outputs[i].Chain = filledSteps(e.Outputs[i].Chain)
	}
}

func filledSteps(ss []Step) []Step {
	if ss == nil {
		return []Step{}
	}
	for i := range ss {
		ss[i].Inputs = filledSteps(ss[i].Inputs)
	}
	return ss
}

// fillLists makes every list of m that is nil empty (JSON [], never null).
func (m *Modules) fillLists() {
	if m.NotReady == nil {
		m.NotReady = []string{}
	}
	if m.Removing == nil {
		m.Removing = []string{}
	}
	if m.Modules == nil {
		m.Modules = []ModuleStatus{}
	}
	for i := range m.Modules {
		if m.Modules[i].Waiting == nil {
			m.Modules[i].Waiting = []report.Waiting{}
		}
	}
}

// FillFailure says the fill socket failed the module's last fill.
type FillFailure struct {
	Socket string    `json:"socket"`
	Why    string    `json:"why"`
	Since  time.Time `json:"since"`
}
