package examples

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

// Files holds the example mesh, the nats-server configuration and the
// systemd units, so a binary (the lab) carries them without a checkout.
// LoadMesh reads the mesh from fs.Sub(Files, "mesh").
//
//go:embed mesh nats systemd
var Files embed.FS

// Mesh is the example mesh as the lab loads it onto the bus.
type Mesh struct {
	// Assignments: bucket key <node>.<module> → the assignment JSON as
	// written in assignments/<node>.<module>.json.
	Assignments map[string][]byte
	// Templates: module → archive member name → bytes, from templates/<module>/.
	Templates map[string]map[string][]byte
	// Config: mesh-config_resolved key <node>.<module>.<key> → value.
	Config map[string]string
	// Bound: bucket <provider>_bound → key <node>.<module>.<provision> → entry JSON.
	Bound map[string]map[string]json.RawMessage
	// Secrets: vault name → value (dev only).
	Secrets map[string]string
}

// LoadMesh reads a mesh laid out like examples/mesh: assignments/,
// templates/<module>/, config.json, bound.json and secrets.json. It checks
// the layout only; nodes.ParseAssignment checks the plans.
func LoadMesh(fsys fs.FS) (*Mesh, error) {
	m := &Mesh{
		Assignments: map[string][]byte{},
		Templates:   map[string]map[string][]byte{},
	}
	files, err := fs.Glob(fsys, "assignments/*.json")
	if err != nil {
		return nil, fmt.Errorf("listing the example assignments: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("the example mesh has no assignments/*.json")
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("reading the example assignment %s: %w", f, err)
		}
		m.Assignments[strings.TrimSuffix(path.Base(f), ".json")] = data
	}
	mods, err := fs.ReadDir(fsys, "templates")
	if err != nil {
		return nil, fmt.Errorf("listing the example templates: %w", err)
	}
	for _, d := range mods {
		if !d.IsDir() {
			return nil, fmt.Errorf("templates/%s: want one directory per module", d.Name())
		}
		members := map[string][]byte{}
		root := path.Join("templates", d.Name())
		err := fs.WalkDir(fsys, root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			members[strings.TrimPrefix(p, root+"/")] = data
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the templates of module %s: %w", d.Name(), err)
		}
		m.Templates[d.Name()] = members
	}
	for _, j := range []struct {
		file string
		into any
	}{{"config.json", &m.Config}, {"bound.json", &m.Bound}, {"secrets.json", &m.Secrets}} {
		data, err := fs.ReadFile(fsys, j.file)
		if err != nil {
			return nil, fmt.Errorf("reading the example %s: %w", j.file, err)
		}
		if err := json.Unmarshal(data, j.into); err != nil {
			return nil, fmt.Errorf("parsing the example %s: %w", j.file, err)
		}
	}
	return m, nil
}

// Archive is module's templates as a gzipped tar (members sorted, fixed
// times and modes, so the same templates give the same bytes) and its
// digest in the plan's form, sha256:<hex>.
func (m *Mesh) Archive(module string) (data []byte, digest string, err error) {
	members, ok := m.Templates[module]
	if !ok {
		return nil, "", fmt.Errorf("the example mesh has no templates for module %s", module)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		body := members[name]
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", fmt.Errorf("archiving template %s of module %s: %w", name, module, err)
		}
		if _, err := tw.Write(body); err != nil {
			return nil, "", fmt.Errorf("archiving template %s of module %s: %w", name, module, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("archiving the templates of module %s: %w", module, err)
	}
	if err := zw.Close(); err != nil {
		return nil, "", fmt.Errorf("compressing the templates of module %s: %w", module, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WithTemplates is the assignment at key with provisioning.templates set to
// ref and digest (the example files hold placeholders there). Other fields
// are kept as they are.
func (m *Mesh) WithTemplates(key, ref, digest string) ([]byte, error) {
	data, ok := m.Assignments[key]
	if !ok {
		return nil, fmt.Errorf("the example mesh has no assignment %s", key)
	}
	var a map[string]json.RawMessage
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("example assignment %s: %w", key, err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(a["provisioning"], &p); err != nil {
		return nil, fmt.Errorf("example assignment %s: provisioning: %w", key, err)
	}
	t, err := json.Marshal(map[string]string{"ref": ref, "digest": digest})
	if err != nil {
		return nil, fmt.Errorf("example assignment %s: %w", key, err)
	}
	p["templates"] = t
	if a["provisioning"], err = json.Marshal(p); err != nil {
		return nil, fmt.Errorf("example assignment %s: %w", key, err)
	}
	return json.Marshal(a)
}

// FillAllowLists are the --allow and --allow-unit globs of the example
// mesh-fill unit (systemd/mesh-fill.service): the paths and units of the
// example modules. The lab runs its fill servers with them, so a module of
// the example the unit would refuse fails in the lab too.
func FillAllowLists() (paths, units []string, err error) {
	unit, err := fs.ReadFile(Files, "systemd/mesh-fill.service")
	if err != nil {
		return nil, nil, err
	}
	var exec strings.Builder
	cont := false
	for _, l := range strings.Split(string(unit), "\n") {
		if cont || strings.HasPrefix(l, "ExecStart=") {
			body, more := strings.CutSuffix(strings.TrimSpace(l), "\\")
			exec.WriteString(body + " ")
			cont = more
		}
	}
	args := strings.Fields(exec.String())
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--allow":
			paths = append(paths, args[i+1])
		case "--allow-unit":
			units = append(units, args[i+1])
		}
	}
	if len(paths) == 0 || len(units) == 0 {
		return nil, nil, errors.New("systemd/mesh-fill.service: its ExecStart names no --allow or no --allow-unit")
	}
	return paths, units, nil
}
