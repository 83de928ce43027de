package server

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendString appends s as a JSON string, '<', '>' and '&' as themselves.
func appendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7F && c != '"' && c != '\\'
	}
	if plain { // the common case: keys, tokens, names
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func errorReply(err error) []byte {
	b := []byte(`{"error":`)
	b = appendString(b, err.Error())
	return append(b, '}')
}

func oosJSON(key, why string) []byte {
	b := []byte(`{"key":`)
	b = appendString(b, key)
	b = append(b, `,"why":`...)
	b = appendString(b, why)
	return append(b, '}')
}

// pageOverhead is the most a reply adds to its items: the frame with
// 20-digit page numbers, and the key "value_too_large" with its number.
const pageOverhead = len(`{"what":"","page":,"pages":,"entries":[],"out_of_shape":[]}`) + 2*20

// entryJSON is one entry: key, decoded tokens by name, value (the stored
// JSON compacted, or a string when it is not JSON). When the entry could
// not fit in a reply of limit bytes, value_too_large (its size in bytes)
// stands for the value.
func entryJSON(key string, names, decoded []string, value []byte, limit int) []byte {
	b := []byte(`{"key":`)
	b = appendString(b, key)
	for i, n := range names {
		b = append(b, ',')
		b = appendString(b, n)
		b = append(b, ':')
		b = appendString(b, decoded[i])
	}
	head := len(b)
	b = append(b, `,"value":`...)
	if json.Valid(value) {
		var c bytes.Buffer
		_ = json.Compact(&c, value) // valid JSON always compacts
		b = append(b, c.Bytes()...)
	} else {
		b = appendString(b, string(value))
	}
	b = append(b, '}')
	if len(b)+pageOverhead+len("registry") > limit {
		b = append(b[:head], `,"value_too_large":`...)
		b = strconv.AppendInt(b, int64(len(value)), 10)
		b = append(b, '}')
	}
	return b
}

// pageReply cuts the items into pages that each fit in limit bytes and
// returns page (empty lists past the last page).
func pageReply(what string, page int, entries, outOfShape [][]byte, limit int) []byte {
	budget := limit - pageOverhead - len(what)
	type cut struct{ e0, e1, o0, o1 int }
	var pages []cut
	cur, used := cut{}, 0
	add := func(n int, isEntry bool) {
		if used > 0 && used+n+1 > budget {
			pages = append(pages, cur)
			cur = cut{e0: cur.e1, e1: cur.e1, o0: cur.o1, o1: cur.o1}
			used = 0
		}
		used += n + 1
		if isEntry {
			cur.e1++
		} else {
			cur.o1++
		}
	}
	for _, e := range entries {
		add(len(e), true)
	}
	for _, o := range outOfShape {
		add(len(o), false)
	}
	pages = append(pages, cur)

	c := cut{e0: len(entries), e1: len(entries), o0: len(outOfShape), o1: len(outOfShape)}
	if page < len(pages) {
		c = pages[page]
	}
	b := []byte(`{"what":`)
	b = appendString(b, what)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(page), 10)
	b = append(b, `,"pages":`...)
	b = strconv.AppendInt(b, int64(len(pages)), 10)
	b = append(b, `,"entries":[`...)
	b = appendList(b, entries[c.e0:c.e1])
	b = append(b, `],"out_of_shape":[`...)
	b = appendList(b, outOfShape[c.o0:c.o1])
	return append(b, "]}"...)
}

func appendList(b []byte, items [][]byte) []byte {
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return b
}
