package server

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// tooLargeReply is the {"error"} that stands for a reply of n bytes the
// bus would not carry (its max payload limit): the pages are cut to fit,
// but an item larger than a page stands alone on its page (a bus may
// take a key longer than its payload: max_control_line over
// max_payload), and an error is not cut to a page. Unsent, the reply left the requester with a timeout and
// only the server's log said why (SPEC §6.2: bad requests get {"error"}).
func tooLargeReply(n, limit int) []byte {
	return errorReply(fmt.Errorf("the reply of %d bytes exceeds the bus's max payload of %d bytes and was not sent "+
		"(a key, value or error in it is too large for one page: narrow the request, or raise the bus's max_payload)", n, limit))
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
	b, _ := pageReplyOf(what, page, entries, outOfShape, limit)
	return b
}

// pageReplyOf is pageReply saying how many pages there are.
func pageReplyOf(what string, page int, entries, outOfShape [][]byte, limit int) ([]byte, int) {
	head := appendString([]byte(`"what":`), what)
	return pageListsOf(head, page, []itemList{{"entries", entries}, {"out_of_shape", outOfShape}}, limit)
}

// itemList is one paged list of a reply: its name and its items, each
// already JSON.
type itemList struct {
	name  string
	items [][]byte
}

// pageListsOf is the paging every answer shares: the reply is
// {<head>,"page":k,"pages":n,"<list>":[…],…}; head (fields without braces)
// stands on every page, and the lists' items, in order, list after list,
// are cut into pages that each fit in limit bytes. It returns page k (empty
// lists past the last page) and how many pages there are. An item larger
// than a page stands alone on its page: its maker keeps it smaller (see
// entryJSON, findingJSON).
func pageListsOf(head []byte, page int, lists []itemList, limit int) ([]byte, int) {
	budget := limit - listsOverhead(head, lists)
	type span struct{ from, to int }
	var pages [][]span // per page, per list
	cur := make([]span, len(lists))
	used := 0
	for li, l := range lists {
		for range l.items {
			n := len(l.items[cur[li].to]) + 1
			if used > 0 && used+n > budget {
				pages = append(pages, cur)
				next := make([]span, len(lists))
				for i, s := range cur {
					next[i] = span{s.to, s.to}
				}
				cur, used = next, 0
			}
			used += n
			cur[li].to++
		}
	}
	pages = append(pages, cur)

	c := make([]span, len(lists))
	for i, l := range lists {
		c[i] = span{len(l.items), len(l.items)}
	}
	if page < len(pages) {
		c = pages[page]
	}
	b := append([]byte{'{'}, head...)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(page), 10)
	b = append(b, `,"pages":`...)
	b = strconv.AppendInt(b, int64(len(pages)), 10)
	for i, l := range lists {
		b = append(b, ',')
		b = appendString(b, l.name)
		b = append(b, `:[`...)
		b = appendList(b, l.items[c[i].from:c[i].to])
		b = append(b, ']')
	}
	return append(b, '}'), len(pages)
}

// listsOverhead is what a page adds to its items: braces, head, the page
// numbers (20 digits each at most) and each list's name and brackets.
func listsOverhead(head []byte, lists []itemList) int {
	n := len(`{,"page":,"pages":}`) + len(head) + 2*20
	for _, l := range lists {
		n += len(`,"":[]`) + len(l.name)
	}
	return n
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

// plainJSON is v as compact JSON with '<', '>' and '&' as themselves.
func plainJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // its callers hand it strings, numbers and lists of them: encoding cannot fail
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
