package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// MaxPlanEntries bounds each list of a plan (files, secrets, provisions,
// provides, items, collections) and the placement names of each kind.
const MaxPlanEntries = 10000

// The file forms of SPEC §3.
const (
	FormOwned        = "owned"
	FormSeed         = "seed"
	FormManagedKeys  = "managed-keys"
	FormManagedBlock = "managed-block"
)

// ErrNoPlan is ParseAssignment's answer to an assignment whose value
// carries no "provisioning": not the provisioner's, so not a module (no
// report, no needs, no event).
var ErrNoPlan = errors.New(`the assignment carries no "provisioning": not the provisioner's`)

// PlanError is an assignment refused: its JSON does not parse, or its plan
// breaks a rule of SPEC §3. It fails that module alone.
type PlanError struct {
	Key    string // the bucket key <node>.<module>
	Node   string // "" when the key is out of shape
	Module string
	Msg    string
	Err    error // the cause underneath, if any (e.g. the JSON error)
	// Unparsed: the value does not parse (not JSON, or JSON that does not
	// read as an assignment: truncated, a field of the wrong type), as
	// opposed to a plan that parses and breaks a rule. Such a value says
	// nothing of what the module contributes: its items stay (holdItems).
	Unparsed bool
}

func (e *PlanError) Error() string {
	who := fmt.Sprintf("assignment %q", e.Key)
	if e.Module != "" {
		who = fmt.Sprintf("module %q on node %q", e.Module, e.Node)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", who, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", who, e.Msg)
}

func (e *PlanError) Unwrap() error { return e.Err }

// ParseAssignment parses the value of mesh-controller_assignments at key
// (<node>.<module>, tokens encoded as SPEC §2.1) and checks its plan against
// SPEC §3. Unknown JSON fields are allowed; a field of the wrong type, a
// field named but for case, or given twice, is not (checkFieldNames). An assignment without "provisioning" is not the provisioner's
// (SPEC §3 r2): it returns ErrNoPlan (but a plan followed by a null under its name is refused: spec.NamesAPlan). "node" and "module", when absent, are the key's. On success an empty form is set to "owned" and an empty
// on_change.action to "none"; an empty mode stays "" (see DefaultMode).
func ParseAssignment(key string, data []byte) (*Assignment, error) {
	toks, err := spec.DecodeKey(key, 2)
	if err != nil {
		return nil, &PlanError{Key: key, Msg: "key out of shape", Err: err}
	}
	node, module := toks[0], toks[1]
	perr := func(msg string, args ...any) error {
		return &PlanError{Key: key, Node: node, Module: module, Msg: fmt.Sprintf(msg, args...)}
	}
	// Whether the value is the provisioner's is asked first: an assignment
	// with no plan is another domain's, whatever shape its other fields
	// have, and whatever its key's names (a module "team/app" of another
	// domain got a failed report and events when they were judged first).
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		if json.Valid(t) {
			return nil, ErrNoPlan // JSON that carries no provisioning (SPEC §3 r2): not ours
		}
		return nil, &PlanError{Key: key, Node: node, Module: module, Unparsed: true,
			Msg: fmt.Sprintf("the assignment is not JSON (it begins %q)", t[:min(len(t), 12)])}
	}
	var probe struct {
		Provisioning json.RawMessage `json:"provisioning"`
		// Node and Module say whether the value names them at all: one
		// given as "" is given, and is not the key's (SPEC §3 r2).
		Node   json.RawMessage `json:"node"`
		Module json.RawMessage `json:"module"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, &PlanError{Key: key, Node: node, Module: module, Msg: "assignment JSON does not parse", Err: syntaxAt(data, err), Unparsed: true}
	}
	if len(probe.Provisioning) == 0 || string(probe.Provisioning) == "null" {
		if spec.NamesAPlan(data) { // a plan, and a null named as it after it
			if msg := checkFieldNames(data); msg != "" {
				return nil, perr("%s", msg)
			}
		}
		return nil, ErrNoPlan
	}
	if msg := checkKeyNames(node, module); msg != "" {
		return nil, perr("%s", msg)
	}
	if !utf8.Valid(data) {
		// JSON would turn the bytes into U+FFFD: a path, a name the plan
		// never said (and two plans into one path).
		return nil, perr("the assignment is not UTF-8 text (byte %d)", invalidUTF8At(data))
	}
	var a Assignment
	if err := json.Unmarshal(data, &a); err != nil { // numbers in placement and have taken as text (loose.go)
		// a value of the wrong type is named where it stands (plantypes.go)
		return nil, &PlanError{Key: key, Node: node, Module: module, Msg: "assignment JSON does not parse", Err: namedWrongType(data, err), Unparsed: true}
	}
	if msg := checkFieldNames(data); msg != "" {
		return nil, perr("%s", msg) // a plan field miscased or given twice (fieldnames.go)
	}
	// "node" and "module", when present, must be the key's; absent (or
	// null), they are taken from it. "" is present: a controller that
	// wrote an empty name is told so rather than filled as if it had
	// left the field out.
	if given(probe.Node) && a.Node != node {
		return nil, perr("node %q in the JSON is not the key's node %q", a.Node, node)
	}
	a.Node = node
	if given(probe.Module) && a.Module != module {
		return nil, perr("module %q in the JSON is not the key's module %q", a.Module, module)
	}
	a.Module = module
	if msg := validatePlan(&a.Provisioning); msg != "" {
		return nil, perr("%s", msg)
	}
	if msg := checkCollectionLines(module, &a.Provisioning); msg != "" {
		return nil, perr("%s", msg)
	}
	fit(&a.Provisioning.Files)
	fit(&a.Provisioning.Items)
	return &a, nil
}

// given says whether a JSON field was written with a value (not left out,
// not null).
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// fit makes *s exactly as long as its elements: the JSON decoder grows a
// slice by doubling, and a plan is kept for as long as its module is here
// (a 100-file plan's files with their room were ~200 bytes a file at 10k
// files; exact, ~130: issue 20).
func fit[T any](s *[]T) {
	if cap(*s) > len(*s) {
		*s = append(make([]T, 0, len(*s)), *s...)
	}
}

// validatePlan checks p and fills its defaults; it returns what is wrong.
func validatePlan(p *Plan) string {
	for _, c := range []struct {
		what string
		n    int
	}{{"files", len(p.Files)}, {"secrets", len(p.Secrets)}, {"provisions", len(p.Provisions)},
		{"provides", len(p.Provides)}, {"items", len(p.Items)}, {"collections", len(p.Collections)}} {
		if c.n > MaxPlanEntries {
			return fmt.Sprintf("%d %s, over the limit of %d per plan (MaxPlanEntries)", c.n, c.what, MaxPlanEntries)
		}
	}
	if len(p.Files) > 0 || len(p.Items) > 0 || p.Templates.Ref != "" || p.Templates.Digest != "" {
		if msg := checkRef(p.Templates.Ref); msg != "" {
			return "templates.ref " + msg
		}
		if !validDigest(p.Templates.Digest) {
			return fmt.Sprintf("templates.digest %q is not sha256:<64 lower-case hex>", p.Templates.Digest)
		}
	}
	paths := map[string]string{} // path -> who writes it
	claim := func(pth, who string) string {
		if other, ok := paths[pth]; ok {
			return fmt.Sprintf("%s: path %s is also written by %s", who, pth, other)
		}
		paths[pth] = who
		return ""
	}
	for i := range p.Files {
		f := &p.Files[i]
		who := fmt.Sprintf("files[%d]", i)
		if msg := checkAbsPath(f.Path); msg != "" {
			return who + ": path " + msg
		}
		who = fmt.Sprintf("files[%d] (%s)", i, f.Path)
		f.Template = templateName(f.Template)
		if msg := checkTemplateName(f.Template); msg != "" {
			return who + ": template " + msg
		}
		switch f.Form {
		case "":
			f.Form = FormOwned
		case FormOwned, FormSeed, FormManagedKeys, FormManagedBlock:
		default:
			return fmt.Sprintf("%s: form %q is not owned, seed, managed-keys or managed-block", who, f.Form)
		}
		if msg := checkOwnership(f.Owner, f.Group, f.Mode); msg != "" {
			return who + ": " + msg
		}
		if msg := checkOnChange(&f.OnChange); msg != "" {
			return who + ": " + msg
		}
		if msg := claim(f.Path, who); msg != "" {
			return msg
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(p.Placement)) {
		names := p.Placement[kind]
		if !spec.IsPlacementKind(spec.Kind(kind)) {
			return fmt.Sprintf("placement kind %q is not dir, port, access, seat or machine", kind)
		}
		if len(names) > MaxPlanEntries {
			return fmt.Sprintf("placement.%s has %d names, over the limit of %d (MaxPlanEntries)", kind, len(names), MaxPlanEntries)
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			if msg := checkPlaceholderName(name); msg != "" {
				return fmt.Sprintf("placement.%s name %q %s", kind, name, msg)
			}
		}
	}
	secretNames := map[string]string{}
	for i := range p.Secrets {
		s := &p.Secrets[i]
		who := fmt.Sprintf("secrets[%d]", i)
		if msg := checkPlaceholderName(s.Name); msg != "" {
			return fmt.Sprintf("%s: name %q %s", who, s.Name, msg)
		}
		if msg := checkVaultName(s.Name); msg != "" {
			return fmt.Sprintf("%s: name %s", who, msg)
		}
		who = fmt.Sprintf("secrets[%d] (%s)", i, s.Name)
		if other, ok := secretNames[s.Name]; ok {
			return fmt.Sprintf("%s: secret name %q is also used by %s", who, s.Name, other)
		}
		secretNames[s.Name] = who
		if msg := checkOwnership(s.Owner, s.Group, s.Mode); msg != "" {
			return who + ": " + msg
		}
		if msg := checkOnChange(&s.OnChange); msg != "" {
			return who + ": " + msg
		}
		if s.Path != "" {
			if msg := checkAbsPath(s.Path); msg != "" {
				return who + ": path " + msg
			}
			if msg := claim(s.Path, who); msg != "" {
				return msg
			}
		}
	}
	type binding struct{ provision, local string }
	bindings := map[binding]string{}
	for i := range p.Provisions {
		pr := &p.Provisions[i]
		who := fmt.Sprintf("provisions[%d]", i)
		if msg := checkProvisionName(pr.Provision); msg != "" {
			return fmt.Sprintf("%s: provision %q %s", who, pr.Provision, msg)
		}
		if msg := spec.CheckNameLen("provision", pr.Provision); msg != "" {
			return fmt.Sprintf("%s: %s", who, msg)
		}
		who = fmt.Sprintf("provisions[%d] (%s)", i, pr.Provision)
		if !validBucketPart(pr.Provider) {
			return fmt.Sprintf("%s: provider %q is not a module name [-_a-zA-Z0-9]+ (it names the bucket <provider>_bound)", who, pr.Provider)
		}
		if msg := spec.CheckNameLen("provider", pr.Provider); msg != "" {
			return fmt.Sprintf("%s: %s", who, msg)
		}
		if strings.TrimSpace(pr.Credential) == "" { // blanks alone are no form either
			return fmt.Sprintf("%s: no credential (the offer's credential form, required: SPEC §3)", who)
		}
		if pr.Local != "" {
			if msg := checkPlaceholderName(pr.Local); msg != "" || strings.Contains(pr.Local, ":") {
				return fmt.Sprintf("%s: local %q may not be named by ${bound:%s/<local>:<key>} (no ':', '}' or control bytes)", who, pr.Local, pr.Provision)
			}
			if msg := checkVaultName(pr.Local); msg != "" {
				return fmt.Sprintf("%s: local %s", who, msg)
			}
		}
		b := binding{pr.Provision, pr.Local}
		if other, ok := bindings[b]; ok {
			return fmt.Sprintf("%s: provision %q local %q is also required by %s", who, pr.Provision, pr.Local, other)
		}
		bindings[b] = who
		if msg := checkOwnership(pr.Owner, pr.Group, pr.Mode); msg != "" {
			return who + ": " + msg
		}
		if msg := checkOnChange(&pr.OnChange); msg != "" {
			return who + ": " + msg
		}
		if pr.Name == "" {
			if pr.Path != "" {
				return who + ": a path needs a name (the credential is written as the secret of that name)"
			}
			continue
		}
		if msg := checkPlaceholderName(pr.Name); msg != "" {
			return fmt.Sprintf("%s: name %q %s", who, pr.Name, msg)
		}
		if msg := spec.CheckNameLen("name", pr.Name); msg != "" {
			return fmt.Sprintf("%s: %s", who, msg)
		}
		if other, ok := secretNames[pr.Name]; ok {
			return fmt.Sprintf("%s: secret name %q is also used by %s", who, pr.Name, other)
		}
		secretNames[pr.Name] = who
		if pr.Path != "" {
			if msg := checkAbsPath(pr.Path); msg != "" {
				return who + ": path " + msg
			}
			if msg := claim(pr.Path, who); msg != "" {
				return msg
			}
		}
	}
	if msg := nestedPath(paths); msg != "" {
		return msg
	}
	if msg := checkProvides(p.Provides); msg != "" {
		return msg
	}
	itemColls := map[string]int{}
	for i, it := range p.Items {
		who := fmt.Sprintf("items[%d]", i)
		if msg := checkPlaceholderName(it.Collection); msg != "" {
			return fmt.Sprintf("%s: collection %q %s", who, it.Collection, msg)
		}
		if msg := spec.CheckNameLen("collection", it.Collection); msg != "" {
			return fmt.Sprintf("%s: %s", who, msg)
		}
		who = fmt.Sprintf("items[%d] (%s)", i, it.Collection)
		p.Items[i].Template = templateName(it.Template)
		if msg := checkTemplateName(p.Items[i].Template); msg != "" {
			return who + ": template " + msg
		}
		if j, ok := itemColls[it.Collection]; ok {
			return fmt.Sprintf("%s: the module already contributes to collection %q in items[%d] (one item per collection per module)", who, it.Collection, j)
		}
		itemColls[it.Collection] = i
	}
	colls := map[string]int{}
	for i, c := range p.Collections {
		if msg := checkPlaceholderName(c.Name); msg != "" {
			return fmt.Sprintf("collections[%d]: name %q %s", i, c.Name, msg)
		}
		if msg := spec.CheckNameLen("collection name", c.Name); msg != "" {
			return fmt.Sprintf("collections[%d]: %s", i, msg)
		}
		if j, ok := colls[c.Name]; ok {
			return fmt.Sprintf("collections[%d]: collection %q is also listed in collections[%d]", i, c.Name, j)
		}
		colls[c.Name] = i
	}
	return ""
}

// checkKeyNames refuses a node or module name (the assignment key's
// tokens) that a vault name or a key could not hold: see checkVaultName.
func checkKeyNames(node, module string) string {
	for _, x := range [][2]string{{"node", node}, {"module", module}} {
		if msg := spec.CheckVaultPart(x[1]); msg != "" {
			return fmt.Sprintf("%s name %.40q %s", x[0], x[1], msg)
		}
		if msg := spec.CheckNameLen(x[0]+" name", x[1]); msg != "" {
			return msg
		}
	}
	return ""
}

// checkVaultName refuses a name that stands as one part of a vault name
// (a secret's name, a provisions entry's local) and holds '/', is "." or
// "..", or is over MaxNameBytes; it quotes the name only when short.
func checkVaultName(n string) string {
	if msg := spec.CheckNameLen(fmt.Sprintf("%.40q", n), n); msg != "" {
		return msg
	}
	if msg := spec.CheckVaultPart(n); msg != "" {
		return fmt.Sprintf("%q %s", n, msg)
	}
	return ""
}

func checkRef(ref string) string {
	switch {
	case strings.HasPrefix(ref, "obj://"):
		rest := ref[len("obj://"):]
		bucket, name, ok := strings.Cut(rest, "/")
		if !ok || !validBucketPart(bucket) || name == "" {
			return fmt.Sprintf("%q is not obj://<bucket>/<name>", ref)
		}
		if hasControl(name) {
			return fmt.Sprintf("%q: object name holds a control byte", ref)
		}
		return ""
	case strings.HasPrefix(ref, "file://"):
		p, err := spec.FileRefPath(ref)
		if err != nil {
			return fmt.Sprintf("%q is not file:///<absolute path>: %v", ref, err)
		}
		if msg := checkAbsPath(p); msg != "" {
			return fmt.Sprintf("%q is not file:///<absolute path>: path %s", ref, msg)
		}
		return ""
	}
	return fmt.Sprintf("%q is neither obj://<bucket>/<name> nor file:///<absolute path>", ref)
}

func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkAbsPath refuses a path that is not absolute and clean.
func checkAbsPath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is not absolute", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Sprintf("%q holds a NUL byte", p)
	case spec.CheckPathLen(p) != "":
		return spec.CheckPathLen(p)
	case spec.HasDotDot(p):
		return fmt.Sprintf("%q holds \"..\"", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not clean (want %q)", p, path.Clean(p))
	case p == "/":
		return `"/" is a directory`
	}
	return ""
}

// templateName is a plan's template name read as the archive's reader
// reads a member's (inputs/archive): a leading "./" dropped. `tar -C dir
// -czf t.tgz .` names every member "./<name>", and `tar tf` lists it so:
// a plan naming "./config.toml" as listed was refused ("not in the
// templates archive") though the archive held exactly that.
func templateName(n string) string {
	for strings.HasPrefix(n, "./") {
		n = n[2:]
	}
	return n
}

// checkTemplateName refuses a template name no archive member can have.
func checkTemplateName(n string) string {
	switch {
	case n == "":
		return "name is empty"
	case strings.HasPrefix(n, "/"):
		return fmt.Sprintf("%q is absolute (want a member name of the archive)", n)
	case spec.HasDotDot(n):
		return fmt.Sprintf("%q holds \"..\"", n)
	case strings.IndexByte(n, 0) >= 0:
		return fmt.Sprintf("%q holds a NUL byte", n)
	}
	return ""
}

// checkPlaceholderName refuses a name that a placeholder could not name.
func checkPlaceholderName(n string) string {
	switch {
	case n == "":
		return "is empty"
	case strings.Contains(n, "}"):
		return `holds "}", which no placeholder can name`
	case hasControl(n):
		return "holds a control byte"
	}
	return ""
}

// checkProvisionName refuses a provision that ${bound:X[/L]:K} or a vault
// name could not name unambiguously.
func checkProvisionName(n string) string {
	if msg := checkPlaceholderName(n); msg != "" {
		return msg
	}
	if strings.ContainsAny(n, ":/") {
		return `holds ":" or "/", which ${bound:<provision>[/<local>]:<key>} cannot name`
	}
	return ""
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// validBucketPart says whether s may stand in a JetStream bucket name.
func validBucketPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// maxOwnerBytes bounds a user or group name, as mesh-fill does.
const maxOwnerBytes = 256

func checkOwnership(owner, group, mode string) string {
	for _, x := range [][2]string{{"owner", owner}, {"group", group}} {
		if len(x[1]) > maxOwnerBytes { // what mesh-fill takes (a directory service's names)
			return fmt.Sprintf("%s %.40q… is %d bytes long; a user or group name is at most %d", x[0], x[1], len(x[1]), maxOwnerBytes)
		}
		if strings.ContainsAny(x[1], ": /") || hasControl(x[1]) {
			return fmt.Sprintf("%s %q is not a user or group name", x[0], x[1])
		}
	}
	if mode != "" {
		m, ok := parseMode(mode)
		if !ok {
			return fmt.Sprintf("mode %q is not octal text like 0640", mode)
		}
		if m > 0o777 {
			// the node-engine refuses them at fill time (SPEC §4.3): fail now
			return fmt.Sprintf("mode %q sets setuid, setgid or sticky bits, which the node-engine does not write", mode)
		}
	}
	return ""
}

// parseMode reads octal text of 3 or 4 digits (0640, 640, 1777; a mode
// over 0777 is refused by checkOwnership), after any more leading zeros
// (00640, as chmod and mesh-fill read it), up to 8 characters in all.
func parseMode(m string) (uint32, bool) {
	if len(m) > 4 && len(m) <= 8 && strings.Trim(m[:len(m)-4], "0") == "" {
		m = m[len(m)-4:]
	}
	if len(m) < 3 || len(m) > 4 {
		return 0, false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < '0' || m[i] > '7' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(m, 8, 32)
	return uint32(v), err == nil
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// DefaultMode is the mode a templated file is sent with (SPEC §3): the
// plan's mode, else 0644; but a file that holds a secret or
// ${consumers:…} gets 0600, "whatever the plan says" (a secret written to
// its own path may be stricter: SecretFileMode). A managed-keys or
// managed-block file whose plan names no mode is sent with none (""): it
// is someone else's file edited in place, and the node-engine keeps the
// mode of one that is there (sudoers its 0440, an env file its 0640) and
// makes a new one 0644. Sent as 0644, every such file was opened to all
// local users at the first fill. The result is four octal digits or "".
func DefaultMode(form string, holdsSecret bool, planMode string) string {
	if holdsSecret {
		return "0600"
	}
	if m, ok := parseMode(planMode); ok {
		return fmt.Sprintf("%04o", m)
	}
	if form == FormManagedKeys || form == FormManagedBlock {
		return ""
	}
	return "0644"
}

// SecretFileMode is the mode of a secret written to its own path
// (secrets[] and named provisions entries, SPEC §3): 0600 unless the
// plan's mode is stricter (its bits a subset of 0600).
func SecretFileMode(planMode string) string {
	if m, ok := parseMode(planMode); ok && m&^0o600 == 0 {
		return fmt.Sprintf("%04o", m)
	}
	return "0600"
}

// SecretNames are the names usable as ${secret:<name>}: the plan's own
// secrets, then the named provisions entries, in plan order.
func (p *Plan) SecretNames() []string {
	out := make([]string, 0, len(p.Secrets)+len(p.Provisions))
	for _, s := range p.Secrets {
		out = append(out, s.Name)
	}
	for _, pr := range p.Provisions {
		if pr.Name != "" {
			out = append(out, pr.Name)
		}
	}
	return out
}

// ProvisionFor is the provisions entry for provision x and local l, the
// one ${bound:x[/l]:…} reads.
func (p *Plan) ProvisionFor(x, l string) (ProvisionSpec, bool) {
	for _, pr := range p.Provisions {
		if pr.Provision == x && pr.Local == l {
			return pr, true
		}
	}
	return ProvisionSpec{}, false
}

// ProvidesProvision says whether the plan serves provision x.
func (p *Plan) ProvidesProvision(x string) bool {
	for _, y := range p.Provides {
		if y.Provision == x {
			return true
		}
	}
	return false
}

// Collects is the collections[] entry named c.
func (p *Plan) Collects(c string) (CollectionSpec, bool) {
	for _, cs := range p.Collections {
		if cs.Name == c {
			return cs, true
		}
	}
	return CollectionSpec{}, false
}

// checkOnChange checks a file's, secret's or credential's on_change and
// sets an empty action to "none"; it returns what is wrong.
func checkOnChange(oc *OnChange) string {
	switch oc.Action {
	case "":
		oc.Action = "none"
	case "none":
	case "restart", "reload":
		if strings.TrimSpace(oc.Unit) == "" {
			return fmt.Sprintf("on_change.action %q needs a unit", oc.Action)
		}
	default:
		return fmt.Sprintf("on_change.action %q is not restart, reload or none", oc.Action)
	}
	if oc.Unit != "" && !isUnitName(oc.Unit) {
		// the node-engine refuses it at every fill, whatever the action
		// (mesh-fill's checkOnChange, outputs/fill/plan.go): fail now
		return fmt.Sprintf("on_change unit %q is not a unit name (systemd's: letters, digits and \"%s\", not starting with \"-\")", oc.Unit, unitPunct)
	}
	return ""
}

// unitPunct is what a systemd unit name holds besides ASCII letters and
// digits: "@" a template's instance, "\\" an escape's (systemd-escape).
// The same alphabet as mesh-fill's (outputs/fill/plan.go), which refuses
// any other unit with a 400: a plan naming one fails its module at once
// rather than at every fill, where a request carrying a secret has its
// refusal's text withheld from the report.
const unitPunct = `:-_.@\`

// isUnitName says whether unit is of systemd's alphabet, not an option,
// and at most 256 bytes (no glob, space, quote or shell metacharacter).
func isUnitName(unit string) bool {
	if unit == "" || unit[0] == '-' || len(unit) > 256 {
		return false
	}
	for i := 0; i < len(unit); i++ {
		c := unit[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(unitPunct, c) >= 0) {
			return false
		}
	}
	return true
}
