package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// MaxText bounds a reason or a why as written to a bucket: text that came
// from elsewhere (a node-engine's error, a provider's refusal) is cut
// there, at a character boundary, and says so.
const MaxText = 512

// Bound is s cut to MaxText bytes, its start and its end kept with a
// marker between them saying how long it was (spec.CutMiddle): the end of
// an error is often its cause.
func Bound(s string) string { return spec.CutMiddle(s, MaxText) }

// encode is v's JSON without HTML escaping: an item's `<`, `>` and `&`
// stay one byte each instead of six, so what was measured is what is sent.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("report: encoding %T: %v", v, err)) // only strings, ints and slices of them
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TooLargeError says a value does not fit the bus's max payload once
// encoded: it is not written (the bus would refuse it every time).
type TooLargeError struct {
	What  string // "item of collection hosts", "report of module web", …
	Size  int    // encoded, in bytes
	Limit int64  // the connection's max payload
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes encoded, over the bus's limit of %d bytes", e.What, e.Size, e.Limit)
}

// maxPayload is the bus's limit on one message, 0 when not known (no
// connection).
func (p *Publisher) maxPayload() int64 {
	if p.NC == nil {
		return 0
	}
	return p.NC.MaxPayload()
}

// fits is nil when b fits limit (0: no limit known), else a TooLargeError
// about what.
func fits(b []byte, limit int64, what string) error {
	if limit > 0 && int64(len(b)) > limit {
		return &TooLargeError{What: what, Size: len(b), Limit: limit}
	}
	return nil
}

// fitReportTo is r encoded on dst's array to fit limit: when r whole does
// not, its file list (then its waiting list) is cut to the longest prefix
// that fits and FilesMore (WaitingMore) counts what was left out. The full
// list is the module's explain on the control socket. An error when even
// the lists cut to nothing do not fit.
func fitReportTo(dst []byte, r Report, limit int64) ([]byte, error) {
	b := appendReport(dst, &r)
	if limit <= 0 || int64(len(b)) <= limit {
		return b, nil
	}
	files, waiting := r.Files, r.Waiting
	if cut(&r, files, limit, func(r *Report, kept []File, more int) { r.Files, r.FilesMore = kept, more }) {
		return encodeReport(&r), nil
	}
	if cut(&r, waiting, limit, func(r *Report, kept []Waiting, more int) { r.Waiting, r.WaitingMore = kept, more }) {
		return encodeReport(&r), nil
	}
	return nil, &TooLargeError{What: "report of module " + r.Module, Size: len(b), Limit: limit}
}

// cut sets on r (through set) the longest prefix of list with which r
// encodes within limit, and the count of the rest; false, with the list
// set empty, when even an empty one does not fit. The count's digits are
// measured with the prefix they go with.
func cut[T any](r *Report, list []T, limit int64, set func(r *Report, kept []T, more int)) bool {
	set(r, list[:0], len(list))
	if int64(len(encodeReport(r))) > limit {
		return false
	}
	n := sort.Search(len(list)+1, func(n int) bool {
		set(r, list[:n], len(list)-n)
		return int64(len(encodeReport(r))) > limit
	}) - 1
	set(r, list[:n], len(list)-n)
	return true
}
