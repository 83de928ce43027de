package spec

import (
	"fmt"
	"unicode/utf8"
)

// Limits of SPEC §4.1. Each is refused with an error that names it.
const (
	MaxArchiveBytes   = 64 << 20  // a templates archive, in bytes
	MaxArchiveMembers = 10000     // members of a templates archive
	MaxRenderedBytes  = 16 << 20  // one rendered file, in bytes
	MaxItemBytes      = 512 << 10 // one rendered collection item, in bytes
	MaxPlaceholders   = 4096      // placeholder occurrences in one template
)

// MaxModulePlaceholders bounds what one module's files and items name in
// all: each file or item counts the distinct placeholders of its template
// (an edge of the graph each). Not SPEC §4.1's, but of the same kind: a
// plan under 1 MB naming one template of 4,096 placeholders from 10,000
// files made 41 million edges (gigabytes, and the client's loop held for
// minutes); 10,000 files of 100 placeholders each are 1 million.
const MaxModulePlaceholders = 1 << 20

// MaxModuleRenderedBytes bounds what one module's templated files hold
// rendered together: what one whole-module fill request carries (the
// node-engine's mesh-fill takes 64 MiB of files, base64 in JSON).
const MaxModuleRenderedBytes = 64 << 20

// MaxNameBytes bounds every name that stands as one token of a key or a
// subject (a node, module, collection, secret, provider, provision or
// local name, a placeholder's name), counted encoded (SPEC §2.1). So no
// key or subject the client builds exceeds MaxControlLine, whatever a plan
// or template says (TestLongestKeyFitsTheBus).
const MaxNameBytes = 255

// MaxControlLine is NATS's default max_control_line: the longest protocol
// line (PUB <subject> <reply> <size>) a server takes before it closes the
// connection.
const MaxControlLine = 4096

// CheckNameLen says why name, as what, is too long ("" when it is not):
// over MaxNameBytes once encoded as a key token.
func CheckNameLen(what, name string) string {
	n := EncodedLen(name)
	if n <= MaxNameBytes {
		return ""
	}
	return fmt.Sprintf("%s is %d bytes encoded, over the limit of %d (MaxNameBytes)", what, n, MaxNameBytes)
}

// EncodedLen is len(EncodeToken(s)) without building it.
func EncodedLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if plainByte(s[i]) {
			n++
		} else {
			n += 3
		}
	}
	return n
}

// Cut is s cut to at most max bytes at a character boundary, with a
// marker saying how long it was: text that came from elsewhere (a
// node-engine's error, a provider's or the vault's refusal) before it goes
// into a bucket, a report or a log line.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (cut: %d bytes in all)", s[:cut], len(s))
}

// CutMiddle is Cut keeping the end too: s cut to at most max bytes, its
// first two thirds and last third kept at character boundaries with the
// marker between them. For a reason, whose end is often its cause (a
// program's last words after the socket and status that name it).
func CutMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := max * 2 / 3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (max - max*2/3)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s… (cut: %d bytes in all) …%s", s[:head], len(s), s[tail:])
}
