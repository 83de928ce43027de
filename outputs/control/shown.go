package control

import "github.com/novox/mesh-provisioner/nodes/spec"

// MaxWhy bounds each reason or why the control socket answers (a module's
// reason in /v1/modules and /v1/explain, each step's why in an
// explanation). What a provider refuses with reaches every placeholder
// that reads its binding, and explain says it at each of them: a reason
// of 1 MB and a template naming a thousand keys of the binding made an
// answer of gigabytes, built in the client's memory when an operator
// asked why the module failed. Cut, a why still says what it began with
// and how long it was; the bucket holds less (report.MaxText).
const MaxWhy = 2048

// shown is why as the control socket answers it: cut to MaxWhy bytes.
func shown(why string) string { return spec.Cut(why, MaxWhy) }
