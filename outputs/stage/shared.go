package stage

// A file of a shared form (managed-block, managed-keys) reports the whole
// file's digest, as every module sharing it reports it (takeFill). A fill
// of one module that moved the file moved it for each of the others too,
// which learnt so only at their next whole request: the refill tick, which
// changed nothing on disk and yet rewrote their reports (SPEC §5.3: it
// must rewrite none), each saying meanwhile the digest of a file no longer
// there. The others' entries take the new digest when the fill lands, and
// their reports are written by the next Send with the filling module's.
// Their action stays what their own last fill did.
func (s *Stage) sharedMoved(module string, j *outJob) {
	for p, fv := range j.sent {
		if !shared(fv.Spec.Form) {
			continue
		}
		f, ok := j.mo.files[p]
		if !ok {
			continue
		}
		for name, mo := range s.modules {
			o, ok := mo.files[p]
			if name == module || !ok || o.Digest == f.Digest {
				continue
			}
			o.Digest = f.Digest
			mo.files[p] = o
			if _, due := s.landed[name]; !due {
				s.landed[name] = landed{mo: mo, shared: true}
			}
		}
	}
}
