package archive

import "errors"

// Sentinels every error of Get wraps one of (where it applies); test them
// with errors.Is.
var (
	// ErrNotThereYet: the archive is not where the ref says yet (object store
	// bucket or object missing, file missing). Wait and ask again.
	ErrNotThereYet = errors.New("not there yet")
	// ErrDigestMismatch: the archive's SHA-256 is not the plan's digest.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrUnsafeMember: a member is not a regular file, its name is absolute,
	// unclean or holds "..", or it is named twice.
	ErrUnsafeMember = errors.New("unsafe member")
	// ErrNotTar: the archive's bytes, fetched whole and of the plan's
	// digest, do not read as a tar, gzipped or not (random bytes, a tar
	// gzipped twice, text, a truncated tar.gz). The digest chose those
	// bytes, so no fetch again can mend them: only a new plan can.
	ErrNotTar = errors.New("not a readable tar (gzipped or not)")
	// ErrLimit: the archive breaks a §4.1 limit (size, members, uncompressed size).
	ErrLimit = errors.New("over the limit")
	// ErrOutsideRoot: a file:// ref names a path not below Store.Root.
	ErrOutsideRoot = errors.New("outside the templates root")
)
