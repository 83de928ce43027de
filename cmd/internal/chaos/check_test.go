package chaos

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// converged lists how real's files and buckets differ from the invariant,
// fresh being a fresh client of every node given real's inputs as they
// are now; none once real has caught up:
//
//   - each module assigned to a node has the same report state on both;
//   - a module applied by the fresh client has every file of its plan
//     byte for byte and mode for mode the same in real's root (a seed
//     file: there in both);
//   - every file of real's root belongs to a module assigned to the node
//     (its current plan when applied, any plan of it else: a waiting
//     module writes nothing, so it removes nothing either), or is a seed
//     or managed-keys file mesh-fill leaves, or a stand-in; a stand-in
//     whose module is gone holds no block; no temp file is left;
//   - every applied report's sha256 digests are those of the files;
//   - no need, item or report is left of a module not assigned.
func converged(real, fresh *rig) []string {
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	assigned, err := assignmentsOf(real.bus)
	if err != nil {
		return []string{err.Error()}
	}
	realReps, err := reportsOf(real.bus)
	if err != nil {
		return []string{err.Error()}
	}
	freshReps, err := reportsOf(fresh.bus)
	if err != nil {
		return []string{"fresh: " + err.Error()}
	}
	for _, node := range chaosNodes {
		realRoot, freshRoot := real.fills[node].root, fresh.fills[node].root
		allowed := map[string]bool{}
		for _, key := range keysOf(assigned) {
			a := assigned[key]
			if a.Node != node {
				continue
			}
			fr, ok := freshReps[key]
			if !ok {
				say("%s: the fresh client has not reported it yet", key)
				continue
			}
			for _, w := range fr.Waiting {
				if w.Kind == "secret" || w.Kind == "consumers" {
					say("%s: the fresh client still waits for the vault (%s)", key, w.Why)
				}
			}
			rr, ok := realReps[key]
			if !ok {
				say("%s: no report (a fresh client's: %s)", key, fr.State)
				continue
			}
			if rr.State != fr.State {
				say("%s: %s (%s%s), a fresh client's %s (%s%s)", key, rr.State, rr.Reason, waits(rr), fr.State, fr.Reason, waits(fr))
			}
			paths := planPaths(a)
			if fr.State != "applied" {
				paths = planPaths(real.w.base[key])
			}
			for p := range paths {
				allowed[p] = true
			}
			if fr.State == "applied" {
				for _, p := range keysOf(paths) {
					if msg := sameFile(realRoot, freshRoot, p, paths[p] == nodes.FormSeed); msg != "" {
						say("%s: %s", key, msg)
					}
				}
			}
			if rr.State == "applied" {
				for _, f := range rr.Files {
					if want, ok := strings.CutPrefix(f.Digest, "sha256:"); ok {
						if got := digestOf(realRoot, f.Path); got != want {
							say("%s: report says %s is sha256:%.12s…, the file is %.12s…", key, f.Path, want, got)
						}
					}
				}
			}
		}
		out = append(out, strayFiles(realRoot, node, allowed, real.w)...)
		for _, p := range keysOf(real.w.standIns) {
			if !allowed[p] && isBlockOnly(real.w, p) {
				if got, _ := os.ReadFile(filepath.Join(realRoot, p)); string(got) != real.w.standIns[p] {
					say("node %s: %s still holds a block of a module gone: %q", node, p, got)
				}
			}
		}
		out = append(out, tempFiles(freshRoot, "fresh "+node)...)
	}
	out = append(out, orphans(real.bus, assigned)...)
	return out
}

// isBlockOnly says whether every plan naming p writes it managed-block.
func isBlockOnly(w *world, p string) bool {
	for _, a := range w.base {
		for _, f := range a.Provisioning.Files {
			if f.Path == p && f.Form != nodes.FormManagedBlock {
				return false
			}
		}
	}
	return true
}

func waits(r report) string {
	var parts []string
	for _, w := range r.Waiting {
		parts = append(parts, w.Kind+":"+w.Name+" "+w.Why)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; waiting " + strings.Join(parts, "; ")
}

// assignmentsOf are the plans of bus's assignments bucket by key.
func assignmentsOf(bus *cluster) (map[string]nodes.Assignment, error) {
	raw, err := bus.entries(spec.AssignmentsBucket)
	if err != nil {
		return nil, err
	}
	out := map[string]nodes.Assignment{}
	for k, v := range raw {
		var a nodes.Assignment
		if err := json.Unmarshal(v, &a); err != nil {
			return nil, fmt.Errorf("assignment %s: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

// sameFile compares path under both roots: bytes and mode, or (seed)
// presence alone.
func sameFile(realRoot, freshRoot, path string, seed bool) string {
	a, errA := os.Lstat(filepath.Join(realRoot, path))
	b, errB := os.Lstat(filepath.Join(freshRoot, path))
	switch {
	case errB != nil:
		return fmt.Sprintf("%s: not in the fresh client's root (%v)", path, errB)
	case errA != nil:
		return fmt.Sprintf("%s: missing (%v)", path, errA)
	case seed:
		return ""
	case a.Mode() != b.Mode():
		return fmt.Sprintf("%s: mode %v, a fresh client's %v", path, a.Mode(), b.Mode())
	}
	x, _ := os.ReadFile(filepath.Join(realRoot, path))
	y, _ := os.ReadFile(filepath.Join(freshRoot, path))
	if !bytes.Equal(x, y) {
		return fmt.Sprintf("%s: %d bytes (sha256 %.12s…), a fresh client's %d (%.12s…)", path, len(x), sum(x), len(y), sum(y))
	}
	return ""
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func digestOf(root, path string) string {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return sum(b)
}

// strayFiles are the files of root no assigned module may hold there, and
// temp files.
func strayFiles(root, node string, allowed map[string]bool, w *world) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := "/" + filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		switch {
		case strings.HasPrefix(d.Name(), "."):
			out = append(out, fmt.Sprintf("node %s: temp file %s left", node, rel))
		case !allowed[rel] && !w.leftover[rel]:
			out = append(out, fmt.Sprintf("node %s: %s belongs to no module assigned to it", node, rel))
		}
		return nil
	})
	return out
}

// tempFiles are the temp files under root.
func tempFiles(root, who string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			out = append(out, fmt.Sprintf("%s: temp file %s left", who, p))
		}
		return err
	})
	return out
}

// orphans are the needs, items and reports of modules not assigned to
// their node.
func orphans(bus *cluster, assigned map[string]nodes.Assignment) []string {
	var out []string
	for _, b := range []struct {
		bucket string
		tokens int
		module int // the token naming the module (an item: its contributor)
	}{{spec.NeedsBucket, 4, 1}, {spec.AppliedBucket, 2, 1}, {spec.CollectBucket, 3, 2}} {
		entries, err := bus.entries(b.bucket)
		if err != nil {
			return append(out, err.Error())
		}
		for _, k := range keysOf(entries) {
			toks, err := spec.DecodeKey(k, b.tokens)
			if err != nil {
				out = append(out, fmt.Sprintf("%s %s: out of shape: %v", b.bucket, k, err))
				continue
			}
			if _, ok := assigned[spec.EncodeKey(toks[0], toks[b.module])]; !ok {
				out = append(out, fmt.Sprintf("%s %s: its module %s is not assigned to %s", b.bucket, k, toks[b.module], toks[0]))
			}
		}
	}
	slices.Sort(out)
	return out
}
