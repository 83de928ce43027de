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
func Escape(s string) string { return escapeWith(s, goRune) }

// EscapeU is Escape with every rune that is not printable written as a
// \u escape (\U for one past U+FFFF): the same rune inside a JSON string,
// for a value printed where JSON is read (--log-format console's lists and
// objects). A byte that is not UTF-8 is \xff as in Escape.
func EscapeU(s string) string { return escapeWith(s, uRune) }

// escapeWith is s with each rune that is not printable written by esc.
func escapeWith(s string, esc func(*strings.Builder, rune)) string {
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
			esc(&b, r)
		}
		i += n
	}
	return b.String()
}

// goRune writes r as Go's %q would inside its quotes.
func goRune(b *strings.Builder, r rune) {
	q := strconv.QuoteRune(r)
	b.WriteString(q[1 : len(q)-1])
}

// uRune writes r as \uXXXX, or \UXXXXXXXX past U+FFFF.
func uRune(b *strings.Builder, r rune) {
	if r > 0xffff {
		fmt.Fprintf(b, `\U%08x`, r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
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
