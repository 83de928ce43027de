package control

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Module names, paths and providers' reasons come from the bus: printed
// raw, their control bytes would drive the operator's terminal (ESC and an
// OSC setting its title, CR overwriting a line, a C1 CSI, a bidi override).

// Escape is s safe to print for people: every rune that is not printable
// (strconv.IsPrint: control bytes C0 and C1, DEL, format runes such as a
// bidi override, spaces other than ' ') is written as Go's %q writes it
// (\x1b, \r, \u202e), and every byte that is not UTF-8 as \xff. The rest,
// backslashes included, is as it was.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// jsonSafe is JSON b with every rune that is not printable written as a
// \u escape: encoding/json leaves DEL, the C1 control runes and format
// runes such as a bidi override raw. Outside a string JSON holds only
// printable ASCII and its newlines, so an escape means the same rune. A
// byte that is not UTF-8 (never from encoding/json) becomes \ufffd.
func jsonSafe(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f || (c < 0x20 && c != '\n') {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == '\n' || (strconv.IsPrint(r) && !(r == utf8.RuneError && n == 1)):
			out = append(out, b[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	return out
}

// JSONSafe is jsonSafe for the commands that print JSON from the bus to a
// terminal (mesh-provisioner sweep --json).
func JSONSafe(b []byte) []byte { return jsonSafe(b) }
