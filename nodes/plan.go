package nodes

// Assignment is the value of mesh-controller_assignments <node>.<module>.
type Assignment struct {
	Node         string `json:"node"`
	Module       string `json:"module"`
	Provisioning Plan   `json:"provisioning"`
}

// Plan is an assignment's provisioning plan (SPEC §3).
type Plan struct {
	Templates   TemplatesRef     `json:"templates"`
	Files       []FileSpec       `json:"files"`
	Placement   Placement        `json:"placement"`
	Secrets     []SecretSpec     `json:"secrets"`
	Provisions  []ProvisionSpec  `json:"provisions"`
	Provides    []Offer          `json:"provides"`
	Items       []ItemSpec       `json:"items"`
	Collections []CollectionSpec `json:"collections"`
}

// TemplatesRef says where the templates archive lives and what it hashes to.
type TemplatesRef struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// OnChange says how a file's program takes a change.
type OnChange struct {
	Action string `json:"action"`
	Unit   string `json:"unit,omitempty"`
}

// FileSpec is one file a module needs.
type FileSpec struct {
	Path     string   `json:"path"`
	Template string   `json:"template"`
	Owner    string   `json:"owner,omitempty"`
	Group    string   `json:"group,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	Form     string   `json:"form,omitempty"`
	OnChange OnChange `json:"on_change"`
}

// SecretSpec is one of the module's own secrets. OnChange says which
// program reads the file at Path (SPEC §3 r2), as a file's.
type SecretSpec struct {
	Name     string   `json:"name"`
	Path     string   `json:"path,omitempty"`
	Owner    string   `json:"owner,omitempty"`
	Group    string   `json:"group,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	OnChange OnChange `json:"on_change"`
}

// ProvisionSpec is what the module requires from a provider.
type ProvisionSpec struct {
	Name       string `json:"name,omitempty"`
	Provision  string `json:"provision"`
	Provider   string `json:"provider"`
	Credential string `json:"credential,omitempty"`
	Local      string `json:"local,omitempty"`
	Path       string `json:"path,omitempty"`
	Owner      string `json:"owner,omitempty"`
	Group      string `json:"group,omitempty"`
	Mode       string `json:"mode,omitempty"`
	// OnChange: which program reads the credential's file at Path, as a
	// secret's.
	OnChange OnChange `json:"on_change"`
}

// ItemSpec is what the module contributes to a collection.
type ItemSpec struct {
	Collection string `json:"collection"`
	Template   string `json:"template"`
}

// CollectionSpec is a collection the module collects.
type CollectionSpec struct {
	Name    string `json:"name"`
	Comment string `json:"comment"`
}
