package fill

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeRequest reads a fill request's body one file at a time: a request
// naming more than MaxFiles files is refused (400) at the first one over,
// never held whole. Decoded whole, a body of MaxBody was read into the
// decoder's buffer and every file of it decoded before the count was
// looked at (a body of 400,000 empty files took 361 MB), with
// MaxRequests of them at once. It reads as json.Decoder.Decode into a
// Request would (a key matched whatever its case, unknown keys skipped),
// but refuses a key of the request named twice (which of the two a reader
// takes is a guess), and a body holding anything but white space after
// its object: a second object, or the rest of a body cut and sent again,
// was dropped unread while the first was filled.
func decodeRequest(r io.Reader) (Request, error) {
	var req Request
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err == io.EOF {
		return req, errors.New("the request has no body; a fill is a JSON object")
	} else if err != nil {
		return req, err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return req, err
		}
		key, _ := tok.(string) // an object's key is a string (Token says so)
		var known string
		for _, k := range [...]string{"module", "whole", "files"} {
			if strings.EqualFold(key, k) {
				known = k
			}
		}
		if known != "" {
			if seen[known] {
				return req, refuse("the request names %q twice", key)
			}
			seen[known] = true
		}
		switch known {
		case "module":
			err = dec.Decode(&req.Module)
		case "whole":
			err = dec.Decode(&req.Whole)
		case "files":
			req.Files, err = decodeFiles(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return req, err
		}
	}
	if err := delim(dec, '}'); err != nil {
		return req, err
	}
	if tok, err := dec.Token(); err != nil && err != io.EOF {
		return req, fmt.Errorf("more after the request's object: %w", err)
	} else if err == nil {
		return req, fmt.Errorf("more after the request's object (%v); a body is one JSON object", tok)
	}
	return req, nil
}

// decodeFiles reads the files array (or null), one file at a time.
func decodeFiles(dec *json.Decoder) ([]File, error) {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("files: want an array, got %v", tok)
	}
	files := []File{}
	for dec.More() {
		if len(files) == MaxFiles {
			return nil, refuse("the request names more than %d files; mesh-fill takes at most %d in one request", MaxFiles, MaxFiles)
		}
		f, err := decodeFile(dec)
		if err != nil {
			var notB64 base64.CorruptInputError
			if errors.As(err, &notB64) {
				return nil, fmt.Errorf("file %d of the request: its content is not base64: %w", len(files)+1, err)
			}
			return nil, fmt.Errorf("file %d of the request: %w", len(files)+1, err)
		}
		if err := checkLengths(len(files), f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, delim(dec, ']')
}

// delim reads the token d.
func delim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}

// Bounds of a file's fields, each far past any it may hold: Linux's
// PATH_MAX, a user or group name (32 bytes in shadow-utils; 256 for a
// directory service's), a mode ("0644"), a form or action (a word), a
// systemd unit name (checkOnChange's 256).
const (
	maxOwnerLen = 256
	maxModeLen  = 16
	maxWordLen  = 32
	maxUnitLen  = 256
)

// checkLengths refuses the i-th file (from 0) when one of its fields is
// longer than it may be, naming the field and its length but not quoting
// it: the refusals that follow quote each field they refuse, and a field
// as long as a body made a log line and an answer as long.
func checkLengths(i int, f File) error {
	for _, c := range [...]struct {
		field  string
		n, max int
	}{
		{"path", len(f.Path), maxPathLen},
		{"owner", len(f.Owner), maxOwnerLen},
		{"group", len(f.Group), maxOwnerLen},
		{"mode", len(f.Mode), maxModeLen},
		{"form", len(f.Form), maxWordLen},
		{"on_change action", len(f.OnChange.Action), maxWordLen},
		{"on_change unit", len(f.OnChange.Unit), maxUnitLen},
	} {
		if c.n > c.max {
			return refuse("file %d of the request: its %s is %d bytes long; at most %d", i+1, c.field, c.n, c.max)
		}
	}
	return nil
}
