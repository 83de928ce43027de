package fill

import (
	"encoding/json"
	"fmt"
	"strings"
)

// fileKeys are the keys of a file of a request, as File's json tags name
// them; matched whatever their case, as encoding/json matches them.
var fileKeys = [...]string{"path", "form", "content", "owner", "group", "mode", "on_change"}

// decodeFile reads one file of the request as json.Decoder.Decode into a
// File would (a key matched whatever its case, unknown keys skipped, null
// a zero File), but refuses a key of the file, or of its on_change, named
// twice: encoding/json takes the last, and which of the two a reader
// takes is a guess (a proxy, a log or a check that read the first path
// or mode was mistaken about what mesh-fill wrote), as for the
// request's own keys (decodeRequest).
func decodeFile(dec *json.Decoder) (File, error) {
	var f File
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return f, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return f, fmt.Errorf("a file is a JSON object, not %v", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := keyOnce(dec, fileKeys[:], seen)
		if err != nil {
			return f, err
		}
		switch key {
		case "path":
			err = dec.Decode(&f.Path)
		case "form":
			err = dec.Decode(&f.Form)
		case "content":
			f.Content = []byte{} // "" leaves it empty, not nil; null sets it nil (no content)
			err = dec.Decode(&f.Content)
		case "owner":
			err = dec.Decode(&f.Owner)
		case "group":
			err = dec.Decode(&f.Group)
		case "mode":
			err = dec.Decode(&f.Mode)
		case "on_change":
			f.OnChange, err = decodeOnChange(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return f, err
		}
	}
	if err := delim(dec, '}'); err != nil {
		return f, err
	}
	f.noContent = f.Content == nil // checkShape refuses it, after what else is out of shape
	return f, nil
}

// decodeOnChange reads a file's on_change (or null), refusing a key of it
// named twice.
func decodeOnChange(dec *json.Decoder) (OnChange, error) {
	var oc OnChange
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return oc, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return oc, fmt.Errorf("on_change is a JSON object, not %v", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := keyOnce(dec, onChangeKeys[:], seen)
		if err != nil {
			return oc, err
		}
		switch key {
		case "action":
			err = dec.Decode(&oc.Action)
		case "unit":
			err = dec.Decode(&oc.Unit)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return oc, err
		}
	}
	return oc, delim(dec, '}')
}

var onChangeKeys = [...]string{"action", "unit"}

// keyOnce reads an object's next key and says which of known it is ("" for
// none); a known key seen before, in any case, is refused.
func keyOnce(dec *json.Decoder, known []string, seen map[string]bool) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, _ := tok.(string) // an object's key is a string (Token says so)
	for _, k := range known {
		if strings.EqualFold(key, k) {
			if seen[k] {
				return "", refuse("%q named twice", key)
			}
			seen[k] = true
			return k, nil
		}
	}
	return "", nil
}
