package server

// The sweep's reply (SPEC §6.2, what "sweep"), as the server pages it and
// as a client joins it.

// Verdicts of a need, and of a key that is not of its bucket's shape.
const (
	VerdictFailed     = "failed"
	VerdictStoodAsked = "stood asked"
	VerdictWaiting    = "waiting"
	VerdictMet        = "met"
	VerdictOutOfShape = "out of shape"
)

// DefaultStoodAfter is how long a need may wait before the sweep says it
// stood asked, when the request does not say.
const DefaultStoodAfter = "10m"

// SweepReply is the sweep's answer. Every page carries What, At,
// StoodAfter, Summary, MissingBuckets and UnreadableBuckets; Findings, Orphans and NoReport
// are paged (AskSweep joins them).
type SweepReply struct {
	What           string   `json:"what"`
	At             string   `json:"at"`
	StoodAfter     string   `json:"stood_after"`
	Page           int      `json:"page,omitempty"`
	Pages          int      `json:"pages,omitempty"`
	Summary        Summary  `json:"summary"`
	MissingBuckets []string `json:"missing_buckets,omitempty"`
	// UnreadableBuckets are the buckets the bus refuses the server (a
	// permission violation), judged as empty as a missing one is: not in
	// SPEC §6.2's reply, added so that a server without the right to read
	// the assignments still sweeps, and says what it could not judge.
	UnreadableBuckets []string `json:"unreadable_buckets,omitempty"`
	// NothingNamed says that the sweep's narrowing (node, module) names
	// nothing the mesh knows: no assignment and no key bears it
	// (sweep_named.go). Not in SPEC §6.2's reply: a mistyped name is told
	// from a mesh with nothing held back.
	NothingNamed string `json:"nothing_named,omitempty"`
	// NoPlan says that the narrowing names no module assigned with a
	// provisioning plan, though it names something (sweep_named.go): not
	// in SPEC §6.2's reply either; the command says it on stderr.
	NoPlan   string    `json:"no_plan,omitempty"`
	Findings []Finding `json:"findings"`
	Orphans  []Orphan  `json:"orphans"`
	// NoReport names the modules Summary.NoReport counts (assigned with a
	// plan, no report written), by node then module: not in SPEC §6.2's
	// reply, added so that an operator learns which they are.
	NoReport []NodeModule `json:"no_report"`
	// FailedModules names the modules Summary.Failed counts (their report
	// says failed), by key, with the report's reason and time: not in
	// SPEC §6.2's reply, added so that `sweep --json` (a CI step) names
	// which modules failed, not only how many, also when no need of theirs
	// failed (a plan or templates archive refused). A server older than
	// it sends none: mesh-provisioner sweep then asks for the reports
	// (AskFailedModules).
	FailedModules []FailedModule `json:"failed_modules"`
	Error         string         `json:"error,omitempty"`
}

// Summary counts the modules by the state of their report (the applied
// bucket) and the needs by verdict. OutOfShape counts the keys of the
// needs, applied and collect buckets that are findings of that verdict.
type Summary struct {
	Modules int `json:"modules"`
	Applied int `json:"applied"`
	Waiting int `json:"waiting"`
	Failed  int `json:"failed"`
	Removed int `json:"removed,omitempty"`
	// NoReport counts the modules assigned with a plan (within the
	// sweep's narrowing) whose node wrote no report: a client that is
	// down or never started. They are not among Modules.
	NoReport int `json:"no_report,omitempty"`
	// NoReportStood counts those of them whose assignment was last
	// written longer than stood_after ago: asked of a client that has not
	// answered, held back as much as a need that stood asked (SPEC §6.2
	// is silent on modules without a report; a cron job must notice a
	// node whose client never came up for its new modules).
	NoReportStood int `json:"no_report_stood,omitempty"`
	// ReportOutOfShape counts the modules (among Modules) whose report
	// is out of shape (each also a finding "out of shape" naming its
	// key), and ReportOutOfShapeStood those of them whose report was
	// written longer than stood_after ago: held back as a module without
	// a report is (not in SPEC §6.2's reply; such a module counted
	// nowhere).
	ReportOutOfShape      int `json:"report_out_of_shape,omitempty"`
	ReportOutOfShapeStood int `json:"report_out_of_shape_stood,omitempty"`
	// StoodModules counts the modules waiting, with no need to judge them
	// by, on their own plan or templates archive (a finding of kind
	// "module") for longer than stood_after.
	StoodModules int        `json:"stood_modules,omitempty"`
	Needs        NeedCounts `json:"needs"`
	OutOfShape   int        `json:"out_of_shape"`
	Orphans      int        `json:"orphans"`
}

// NeedCounts counts needs by verdict.
type NeedCounts struct {
	Met        int `json:"met"`
	Waiting    int `json:"waiting"`
	StoodAsked int `json:"stood_asked"`
	Failed     int `json:"failed"`
}

// Finding is a group of needs that share verdict, owner, kind, name and
// why; or, with verdict "out of shape", one key of Bucket that is not of
// its shape or whose value is not (values.go). Since is the earliest last
// state change of its needs (out of shape: when its key's entry was
// written). Count is how many needs it holds; Needs
// lists them. A finding whose needs would not fit in one page is paged as
// a list is: its first part on one page, the rest on the pages after,
// each part the same finding with Continued set and more of its needs
// (AskSweep joins them). NeedsLeftOut says how many a part left out only
// when not even one need fits beside the finding's text.
type Finding struct {
	Verdict      string       `json:"verdict"`
	Owner        string       `json:"owner"`
	Kind         string       `json:"kind,omitempty"`
	Name         string       `json:"name,omitempty"`
	Bucket       string       `json:"bucket,omitempty"`
	Key          string       `json:"key,omitempty"`
	Why          string       `json:"why"`
	Since        string       `json:"since,omitempty"`
	Count        int          `json:"count"`
	Needs        []NodeModule `json:"needs"` // a list always, empty for a key out of shape (no null: SPEC's findings each carry one)
	NeedsLeftOut int          `json:"needs_left_out,omitempty"`
	// Continued says this is the finding before it in the reply, continued
	// (on the next page): its Needs are more of that finding's.
	Continued bool `json:"continued,omitempty"`
}

// NodeModule names one module on one node.
type NodeModule struct {
	Node   string `json:"node"`
	Module string `json:"module"`
}

// Orphan is a key of the needs, applied or collect bucket whose node and
// module are assigned nowhere.
type Orphan struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Why    string `json:"why"`
}

// Held says whether the sweep found something that holds the mesh back:
// a need failed or stood asked, a module stood asked on its own plan or
// archive, without a report or with its report out of shape, or a
// module's report says failed (a plan
// or a fill that failed leaves its needs met; SPEC §6.2's exit 1 is for
// anything that failed).
func (r SweepReply) Held() bool {
	return r.Summary.Failed > 0 || r.Summary.Needs.Failed > 0 || r.Summary.Needs.StoodAsked > 0 || r.Summary.StoodModules > 0 ||
		r.Summary.NoReportStood > 0 || r.Summary.ReportOutOfShapeStood > 0
}
