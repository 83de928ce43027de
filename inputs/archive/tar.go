package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// limits bounds what readArchive accepts.
type limits struct {
	bytes   int64 // uncompressed tar stream, and the sum of member sizes
	members int   // tar entries, directories included
}

var defaultLimits = limits{bytes: spec.MaxArchiveBytes, members: spec.MaxArchiveMembers}

// errStreamTooBig is what countingReader returns past its limit.
var errStreamTooBig = errors.New("uncompressed stream over the limit")

// countingReader refuses to deliver more than max bytes, so a gzip bomb is
// stopped while it is being decompressed.
type countingReader struct {
	r        io.Reader
	n, max   int64
	exceeded bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.max {
		// Tell a clean end from more data past the limit.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.exceeded = true
			return 0, errStreamTooBig
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	}
	if rest := c.max - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readArchive reads a tar, gzipped or not (told by the magic bytes 1f 8b),
// and returns its regular files by name. Errors do not name the ref; the
// caller adds it. r holds bytes already fetched whole and checked against
// the plan's digest (in memory), so a failure to read them is the bytes'
// own and wraps ErrNotTar: it fails the module (Broken) rather than wait
// for a fetch again that would get the same bytes.
func readArchive(r io.Reader, lim limits) (map[string][]byte, error) {
	br := bufio.NewReader(r)
	var stream io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: reading gzip: %w", ErrNotTar, err)
		}
		defer zr.Close()
		stream = zr
	}
	cr := &countingReader{r: stream, max: lim.bytes}
	tr := tar.NewReader(cr)

	files := make(map[string][]byte)
	var entries int
	var total int64
	tooBig := func(at string) error {
		return fmt.Errorf("%w: contents over %s uncompressed (at member %q)", ErrLimit, mib(lim.bytes), at)
	}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			if cr.exceeded {
				return nil, fmt.Errorf("%w: contents over %s uncompressed", ErrLimit, mib(lim.bytes))
			}
			return nil, fmt.Errorf("%w: reading tar: %w", ErrNotTar, err)
		}
		entries++
		if entries > lim.members {
			return nil, fmt.Errorf("%w: more than %d members", ErrLimit, lim.members)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			// Not kept, but its name is checked like a file's: an archive
			// naming "/etc/" or "../up/" is not what the plan's author
			// meant to ship.
			if err := dirName(hdr.Name); err != nil {
				return nil, err
			}
			continue
		case tar.TypeXGlobalHeader:
			continue // PAX defaults for what follows; its name means nothing
		case tar.TypeReg, '\x00', tar.TypeGNUSparse:
		default:
			return nil, fmt.Errorf("%w %q: %s, not a regular file", ErrUnsafeMember, hdr.Name, typeName(hdr.Typeflag))
		}
		name, err := memberName(hdr.Name)
		if err != nil {
			return nil, err
		}
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("%w %q: named twice", ErrUnsafeMember, hdr.Name)
		}
		if hdr.Size < 0 || hdr.Size > lim.bytes-total {
			return nil, tooBig(hdr.Name)
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			if cr.exceeded {
				return nil, tooBig(hdr.Name)
			}
			return nil, fmt.Errorf("%w: reading member %q: %w", ErrNotTar, hdr.Name, err)
		}
		total += hdr.Size
		files[name] = data
	}
}

// memberName normalises a member's name (a leading "./" is dropped) and
// refuses one that is empty, absolute, unclean or holds "..".
func memberName(raw string) (string, error) {
	return checkName(raw, raw)
}

// dirName checks a directory member's name as memberName does a file's,
// its one trailing "/" aside; "./" (the archive's top) is fine.
func dirName(raw string) error {
	name := raw
	if len(name) > 1 {
		name = strings.TrimSuffix(name, "/")
	}
	_, err := checkName(raw, name)
	return err
}

// checkName is memberName of name; its errors quote raw, the name as the
// archive spells it.
func checkName(raw, name string) (string, error) {
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	switch {
	case name == "":
		return "", fmt.Errorf("%w %q: empty name", ErrUnsafeMember, raw)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%w %q: absolute name", ErrUnsafeMember, raw)
	case spec.HasDotDot(name):
		return "", fmt.Errorf("%w %q: name holds \"..\"", ErrUnsafeMember, raw)
	case path.Clean(name) != name:
		return "", fmt.Errorf("%w %q: name is not clean (it reads %q)", ErrUnsafeMember, raw, path.Clean(name))
	}
	return name, nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	default:
		return fmt.Sprintf("type %q", t)
	}
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
