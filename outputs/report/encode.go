package report

import (
	"slices"
	"strconv"
	"sync"
)

// encodeReport is what encode(r) is (its nil lists as []), written field
// by field: a report is encoded on every change of its module, and
// encoding/json's reflection over a 100-file report was most of its cost
// (issue 20).
// TestEncodeReportSaysWhatEncodingJSONSays holds the two together.
func encodeReport(r *Report) []byte { return appendReport(nil, r) }

// appendReport appends encodeReport(r) to dst.
func appendReport(dst []byte, r *Report) []byte {
	n := 96 + len(r.Node) + len(r.Module) + len(r.State) + len(r.At) + len(r.Reason)
	for i := range r.Files {
		n += 40 + len(r.Files[i].Path) + len(r.Files[i].Action) + len(r.Files[i].Digest)
	}
	for i := range r.Waiting {
		n += 32 + len(r.Waiting[i].Kind) + len(r.Waiting[i].Name) + len(r.Waiting[i].Why)
	}
	b := slices.Grow(dst, n)
	b = append(b, `{"node":`...)
	b = appendJSONString(b, r.Node)
	b = append(b, `,"module":`...)
	b = appendJSONString(b, r.Module)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, r.State)
	b = append(b, `,"at":`...)
	b = appendJSONString(b, r.At)
	// Both lists are lists whatever the state (SPEC §5.3 shows them so):
	// [] when empty or nil, never null.
	b = append(b, `,"files":`...)
	b = append(b, '[')
	for i := range r.Files {
		f := &r.Files[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendJSONString(b, f.Path)
		b = append(b, `,"action":`...)
		b = appendJSONString(b, f.Action)
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, f.Digest)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.FilesMore != 0 {
		b = append(b, `,"files_more":`...)
		b = strconv.AppendInt(b, int64(r.FilesMore), 10)
	}
	b = append(b, `,"waiting":`...)
	b = append(b, '[')
	for i := range r.Waiting {
		w := &r.Waiting[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, w.Kind)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, w.Name)
		b = append(b, `,"why":`...)
		b = appendJSONString(b, w.Why)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.WaitingMore != 0 {
		b = append(b, `,"waiting_more":`...)
		b = strconv.AppendInt(b, int64(r.WaitingMore), 10)
	}
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, r.Reason)
	return append(b, '}')
}

// reportBufs holds encoded reports' arrays once their event is out
// (onAck), for the next reports: a 100-file report is ~13 KB a change.
var reportBufs sync.Pool // of *[]byte

func getReportBuf() []byte {
	if b, ok := reportBufs.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

// putReportBuf gives b's array back; nothing may use b afterwards.
func putReportBuf(b []byte) {
	if cap(b) == 0 || cap(b) > 256<<10 {
		return
	}
	b = b[:0]
	reportBufs.Put(&b)
}
