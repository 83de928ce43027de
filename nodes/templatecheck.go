package nodes

import (
	"bytes"
	"fmt"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// parseTemplates parses every template the plan's files and items name. A
// template is parsed once per archive digest, however many modules use it
// (a parsed template is never changed, so modules share it).
// A placeholder of a kind this client does not fill is one of faults.
// named is every placeholder the templates name, nil when one is missing
// or does not parse (what they name is then not known).
func (m *NodeGraph) parseTemplates(p *Plan, members map[string][]byte, faults placeholderFaults) (_ map[string]*Template, named map[Placeholder]bool, _ []string) {
	cache := m.parsed[p.Templates.Digest]
	if cache == nil {
		cache = map[string]parsedTemplate{}
		m.parsed[p.Templates.Digest] = cache
	}
	out := map[string]*Template{}
	var reasons []string
	said := map[string]bool{} // missing or broken: said (and parsed) once, at the first file or item naming it
	named, unknown := map[Placeholder]bool{}, false
	defer func() {
		if unknown {
			named = nil
		}
	}()
	for i := range len(p.Files) + len(p.Items) {
		var name string
		if i < len(p.Files) {
			name = p.Files[i].Template
		} else {
			name = p.Items[i-len(p.Files)].Template
		}
		if _, done := out[name]; done || said[name] {
			continue
		}
		text, ok := members[name]
		if !ok {
			said[name] = true
			who := ""
			if i < len(p.Files) {
				who = fmt.Sprintf("files[%d] (%s)", i, p.Files[i].Path)
			} else {
				who = fmt.Sprintf("items[%d] (%s)", i-len(p.Files), p.Items[i-len(p.Files)].Collection)
			}
			// The archive is named by the plan's digest, not its ref: one
			// held already under that digest (another module's, cached) is
			// used and the ref not read (SPEC §3), so the ref may hold the
			// template where the archive used does not. The digest is the
			// plan's own, public: never that of bytes a ref held.
			digest := p.Templates.Digest
			if len(digest) > len("sha256:")+12 {
				digest = digest[:len("sha256:")+12] + "…"
			}
			reasons = append(reasons, fmt.Sprintf("%s: template %q is not in the templates archive %s (the plan's digest; ref %s)",
				who, name, digest, p.Templates.Ref))
			unknown = true
			continue
		}
		if c, ok := cache[name]; ok && bytes.Equal(c.text, text) {
			out[name] = c.t
			for _, ph := range c.t.phs {
				named[ph] = true
			}
			continue
		}
		t, err := ParseTemplate(name, text)
		if err == nil {
			for _, ph := range t.phs {
				named[ph] = true
			}
			if ph, kerr := firstUnfilled(t); kerr != nil {
				faults.add(ph, kerr.Error())
				err = kerr
			}
		} else {
			unknown = true
		}
		if err != nil {
			said[name] = true
			reasons = append(reasons, err.Error())
			continue
		}
		out[name] = t
		cache[name] = parsedTemplate{text: text, t: t}
	}
	return out, named, reasons
}

// parsedTemplate is a template parsed once and the text it came from.
type parsedTemplate struct {
	text []byte
	t    *Template
}

// pruneParsed forgets the parsed templates of digests no plan names.
func (m *NodeGraph) pruneParsed() {
	live := map[string]bool{}
	for _, mod := range m.mods {
		if mod.asg != nil {
			live[mod.asg.Provisioning.Templates.Digest] = true
		}
	}
	for d := range m.parsed {
		if !live[d] {
			delete(m.parsed, d)
		}
	}
}

// checkPlaceholders holds the rules a plan's placeholders must keep: every
// one names something the plan holds, and an item names no secret. Each
// template is checked once as a file's and once as an item's, however many
// files or items name it, against sets of what the plan holds: a plan of
// 10,000 files naming one template of 4,096 placeholders, each looked up
// in a list of 10,000 secrets, held the client's loop for hours, and its
// reason said each fault once per file. Each placeholder at fault is one
// of faults, with what its reason says of it.
func (m *NodeGraph) checkPlaceholders(mod *module, tmpls map[string]*Template, faults placeholderFaults) []string {
	p := &mod.asg.Provisioning
	if msg := tooManyPlaceholders(p, tmpls); msg != "" {
		return []string{msg}
	}
	secrets := setOf(p.SecretNames())
	provides := map[string]bool{}
	for _, o := range p.Provides {
		provides[o.Provision] = true
	}
	collects := map[string]bool{}
	for _, c := range p.Collections {
		collects[c.Name] = true
	}
	type xl struct{ x, l string }
	provisions, listed := map[xl]bool{}, map[string]bool{}
	for _, pr := range p.Provisions {
		provisions[xl{pr.Provision, pr.Local}] = true
		listed[pr.Provision] = true
	}
	var reasons []string
	checked := map[bool]map[*Template]bool{false: {}, true: {}} // as a file's, as an item's
	check := func(t *Template, item bool) {
		if checked[item][t] {
			return
		}
		checked[item][t] = true
		for _, ph := range t.phs {
			msg := ""
			switch {
			case item && spec.IsSecretKind(ph.Kind):
				msg = "an item names " + ph.String() + ": an item is kept in a bucket, and no secret is"
			case ph.Kind == spec.Secret && !secrets[ph.Name]:
				msg = ph.String() + " names no secret of the plan (secrets[] or a named provisions[] entry)"
			case ph.Kind == spec.Consumers && !provides[ph.Name]:
				msg = ph.String() + ": this module does not provide " + ph.Name
			case ph.Kind == spec.Bound:
				x, l, _, err := ParseBoundName(ph.Name)
				ok := err == nil && provisions[xl{x, l}]
				switch {
				case err != nil:
					msg = ph.String() + ": " + err.Error()
				case !ok && l != "":
					// provisions[] may list x with another local (or none):
					// the local is what it lacks
					msg = ph.String() + " names provision " + x + " with local " + l + ", which provisions[] does not list"
				case !ok && listed[x]:
					// provisions[] lists x, with a local only
					msg = ph.String() + " names provision " + x + " with no local, which provisions[] does not list"
				case !ok:
					msg = ph.String() + " names provision " + x + " which provisions[] does not list"
				}
			case spec.IsCollectionKind(ph.Kind):
				if !collects[CollectionName(ph)] {
					msg = ph.String() + " names collection " + CollectionName(ph) + " which collections[] does not list"
				}
			}
			if msg != "" {
				why := t.ErrorAt(ph, msg).Error()
				reasons = append(reasons, why)
				faults.add(ph, why)
			}
		}
	}
	for i, f := range p.Files {
		if t := tmpls[f.Template]; t != nil {
			check(t, false)
			if msg := othersMayWrite(f, t); msg != "" {
				reasons = append(reasons, fmt.Sprintf("files[%d] (%s): %s", i, f.Path, msg))
			}
		}
	}
	for _, it := range p.Items {
		if t := tmpls[it.Template]; t != nil {
			check(t, true)
		}
	}
	return reasons
}

// tooManyPlaceholders says what is wrong when the files and items of plan
// p name more than spec.MaxModulePlaceholders placeholders in all, each
// counting its template's distinct ones ("" when they do not).
func tooManyPlaceholders(p *Plan, tmpls map[string]*Template) string {
	n := 0
	for _, f := range p.Files {
		if t := tmpls[f.Template]; t != nil {
			n += len(t.phs)
		}
	}
	for _, it := range p.Items {
		if t := tmpls[it.Template]; t != nil {
			n += len(t.phs)
		}
	}
	if n <= spec.MaxModulePlaceholders {
		return ""
	}
	return fmt.Sprintf("the module's %d files and %d items name %d placeholders in all (each its template's), over the limit of %d (MaxModulePlaceholders): name fewer, or split the module",
		len(p.Files), len(p.Items), n, spec.MaxModulePlaceholders)
}

// setOf is the set of the strings in list.
func setOf(list []string) map[string]bool {
	s := make(map[string]bool, len(list))
	for _, x := range list {
		s[x] = true
	}
	return s
}

// othersMayWrite says what is wrong with file f's mode when the plan's
// mode, as it is sent (DefaultMode), lets others write the file: the
// node-engine refuses it (mesh-fill: 400, a file any local user may
// rewrite being no file a program can trust), so the module fails at once
// rather than at every retry tick's fill. A file whose template holds a
// secret or ${consumers:…} is written 0600 whatever the plan says (SPEC
// §3): its plan's mode is no refusal. Known only once the templates are
// read, so it is checked here and not in ParseAssignment.
func othersMayWrite(f FileSpec, t *Template) string {
	if f.Mode == "" {
		return ""
	}
	if md, ok := parseMode(f.Mode); !ok || md&0o002 == 0 {
		return ""
	}
	for _, ph := range t.Placeholders() {
		if spec.IsSecretKind(ph.Kind) {
			return ""
		}
	}
	return fmt.Sprintf("mode %q lets others write the file (any local user), which the node-engine does not write", f.Mode)
}
