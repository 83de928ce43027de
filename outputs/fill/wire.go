package fill

// The words of the wire (SPEC §4.3).
const (
	// FormOwned: the file is the module's; written whole when its bytes differ.
	FormOwned = "owned"
	// FormSeed: written only when absent; an existing file is kept as is.
	FormSeed = "seed"
	// FormManagedKeys: content is key=value lines; only those keys are set.
	FormManagedKeys = "managed-keys"
	// FormManagedBlock: content is the block between the module's markers.
	FormManagedBlock = "managed-block"

	ActionWritten   = "written"
	ActionUnchanged = "unchanged"
	ActionKept      = "kept"
	ActionMerged    = "merged"
	// ActionRemoved: a file the module's declaration no longer names was
	// removed (owned) or lost the module's block (managed-block).
	ActionRemoved = "removed"

	OnChangeRestart = "restart"
	OnChangeReload  = "reload"
	OnChangeNone    = "none"

	ProgramRestarted = "restarted"
	ProgramReloaded  = "reloaded"
	ProgramNone      = "none"

	// FillPath is the route a module's files are filled at (POST).
	FillPath = "/v1/fill"
	// ModulesPath is the prefix of DELETE /v1/modules/<module>: every file
	// of the module removed as a whole request naming none would.
	ModulesPath = "/v1/modules/"
)

// OnChange names the program to restart or reload when a file changes.
// Action is "restart", "reload", "none" or empty (none).
type OnChange struct {
	Action string `json:"action"`
	Unit   string `json:"unit,omitempty"`
}

// File is one file of a fill request. Content travels as base64.
type File struct {
	Path     string   `json:"path"`
	Form     string   `json:"form"`
	Content  []byte   `json:"content"`
	Owner    string   `json:"owner,omitempty"`
	Group    string   `json:"group,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	OnChange OnChange `json:"on_change,omitzero"`

	noContent bool // decoded without content (the key missing, or null): refused by checkShape
}

// Request is the body of POST /v1/fill: one module's files. Whole says the
// request names every file of the module (its declaration, SPEC §4.3
// (r2)): files the module had written before and no longer names are
// removed. Without it only the files named are touched.
type Request struct {
	Module string `json:"module"`
	Whole  bool   `json:"whole,omitempty"`
	Files  []File `json:"files"`
}

// Canonical is action as one of the constants above when it is one (a
// decoded answer's strings are each their own copy; a node's client keeps
// one per file it filled), else action itself.
func Canonical(action string) string {
	for _, a := range [...]string{ActionWritten, ActionUnchanged, ActionKept, ActionMerged, ActionRemoved} {
		if action == a {
			return a
		}
	}
	return action
}

// FileResult says what became of one file; Digest is "sha256:<hex>" of the
// file's bytes on disk afterwards (none for a file removed).
type FileResult struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Digest string `json:"digest,omitempty"`
}

// Program says what was done to one unit: "restarted", "reloaded" or "none".
type Program struct {
	Unit   string `json:"unit"`
	Action string `json:"action"`
}

// Response is the 200 body of POST /v1/fill. Program is the one unit SPEC
// §4.3 shows: the first restarted or reloaded, or the first named when none
// was (headline), so a client reading it alone is never told "none" while
// a program was acted on; Programs lists every unit named, in the order of
// the request (a request may name several).
type Response struct {
	Files    []FileResult `json:"files"`
	Program  *Program     `json:"program,omitempty"`
	Programs []Program    `json:"programs,omitempty"`
}

// headline is the Program of progs an answer names as its one program: the
// first restarted or reloaded, else the first.
func headline(progs []Program) *Program {
	for i := range progs {
		if progs[i].Action != ProgramNone {
			return &progs[i]
		}
	}
	return &progs[0]
}

// DeleteResponse is the 200 body of DELETE /v1/modules/<module>: the files
// removed (or whose block was), each "removed", and the programs of the
// shared files whose block was taken out (removeprograms.go).
type DeleteResponse struct {
	Files    []FileResult `json:"files"`
	Programs []Program    `json:"programs,omitempty"`
}

// errorBody is the 4xx/5xx body.
type errorBody struct {
	Error string `json:"error"`
	// Path is the path a 409 refused because another module's declaration
	// holds it (owned or seed, or shared with one that is): the client
	// leaves it out of its next whole request, so the paths its module
	// still holds and no longer names are let go (a swap of paths between
	// two modules would otherwise refuse both for ever).
	Path string `json:"path,omitempty"`
	// Holder is the module whose declaration holds Path: the truth of
	// who holds it (SPEC §4.3), which the client's own order of claims
	// may not know (a holder whose plan it refused since it started).
	Holder string `json:"holder,omitempty"`
	// Key, when set, is the managed-keys key of Path that Holder manages:
	// the path is shared, only the key is Holder's.
	Key string `json:"key,omitempty"`
	// ProgramFailed says (a 500) that the request was carried out, its
	// files written and removed and recorded as the module's declaration,
	// and that what failed is a restart or reload it ran (named in Error;
	// kept pending: the module's next request runs it again, SPEC §4.3
	// (r2)). The same request fails the same way until the unit is mended,
	// so the client tries it again with backoff, not at every tick. Absent
	// (a node-engine that does not say it, or any other failure): the
	// client tries again at every tick.
	ProgramFailed bool `json:"program_failed,omitempty"`
}
