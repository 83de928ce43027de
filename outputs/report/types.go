package report

// Need is the value of mesh-provisioner_needs <node>.<module>.<kind>.<name>.
type Need struct {
	Node   string `json:"node"`
	Module string `json:"module"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	State  string `json:"state"` // met | waiting | failed
	Why    string `json:"why"`   // "" when met: SPEC §5.2 lists the field
}

// File is a filled file in a report.
type File struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Digest string `json:"digest"`
}

// Waiting is one thing a waiting module waits for.
type Waiting struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Report is the value of mesh-provisioner_applied <node>.<module> and of
// the event prov.applied.<node>.<module>. A report always fits the bus's
// max payload: when its lists do not, they are cut and FilesMore and
// WaitingMore count what was left out (the module's explain on the control
// socket lists every file). Reason and each why are cut to MaxText.
// Every field SPEC §5.3 lists is written whatever the state: "waiting"
// is [] and "reason" "" when there is none (as a need's "why", §5.2).
type Report struct {
	Node        string    `json:"node"`
	Module      string    `json:"module"`
	State       string    `json:"state"` // applied | waiting | failed | removed
	At          string    `json:"at"`
	Files       []File    `json:"files"`
	FilesMore   int       `json:"files_more,omitempty"`
	Waiting     []Waiting `json:"waiting"`
	WaitingMore int       `json:"waiting_more,omitempty"`
	Reason      string    `json:"reason"`
}

// Item is the value of mesh-provisioner_collect <node>.<collection>.<contributor>.
type Item struct {
	Collection  string `json:"collection"`
	Contributor string `json:"contributor"`
	Item        string `json:"item"`
}
