package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// EncodeToken writes s as one key token (SPEC §2.1): A-Z a-z 0-9 - _ /
// stand as themselves, every other byte of the UTF-8 form is =XX.
func EncodeToken(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xF])
	}
	return b.String()
}

// DecodeToken is the exact inverse of EncodeToken. A token that is empty,
// holds an '=' not followed by two upper-case hex digits, escapes a byte
// that stands as itself, holds a byte no token may hold, or decodes to
// bytes that are not UTF-8 is out of shape.
func DecodeToken(tok string) (string, error) {
	if tok == "" {
		return "", fmt.Errorf("empty token")
	}
	var b strings.Builder
	b.Grow(len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case plainByte(c):
			b.WriteByte(c)
		case c == '=':
			if i+2 >= len(tok) {
				return "", fmt.Errorf("token %q: '=' at %d is not followed by two upper-case hex digits", tok, i)
			}
			hi, ok1 := unhex(tok[i+1])
			lo, ok2 := unhex(tok[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("token %q: '=' at %d is not followed by two upper-case hex digits", tok, i)
			}
			v := hi<<4 | lo
			if plainByte(v) {
				return "", fmt.Errorf("token %q: =%s escapes %q, which stands as itself", tok, tok[i+1:i+3], string(rune(v)))
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("token %q: byte %q at %d may not stand in a token", tok, c, i)
		}
	}
	// A token is the UTF-8 form of a name (SPEC §2.1): one whose bytes are
	// not UTF-8 names nothing (JSON would turn them into U+FFFD, and two
	// such modules into one at the fill socket and the vault).
	if !utf8.ValidString(b.String()) {
		return "", fmt.Errorf("token %q decodes to bytes that are not UTF-8", tok)
	}
	return b.String(), nil
}

// EncodeKey encodes each part as a token and joins them with '.'.
func EncodeKey(parts ...string) string {
	enc := make([]string, len(parts))
	for i, p := range parts {
		enc[i] = EncodeToken(p)
	}
	return strings.Join(enc, ".")
}

// DecodeKey splits key on '.' and decodes each token. It refuses a key whose
// token count is not n (n < 0 accepts any count of at least one).
func DecodeKey(key string, n int) ([]string, error) {
	toks := strings.Split(key, ".")
	if n >= 0 && len(toks) != n {
		return nil, fmt.Errorf("key %q has %d tokens, want %d", key, len(toks), n)
	}
	out := make([]string, len(toks))
	for i, t := range toks {
		v, err := DecodeToken(t)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		out[i] = v
	}
	return out, nil
}

const hexDigits = "0123456789ABCDEF"

func plainByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '/'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// GivenEncoded says whether name reads as the key token of another name:
// it holds an '=' escape DecodeToken reads (a=2Eb is the token of a.b). A
// name is given as it is and encoded again (a=3D2Eb), so such a name was
// most likely copied off a key; decoded is the name it encodes.
func GivenEncoded(name string) (decoded string, ok bool) {
	if !strings.Contains(name, "=") {
		return "", false
	}
	d, err := DecodeToken(name)
	if err != nil || d == name {
		return "", false
	}
	return d, true
}

// CheckUTF8 says why name is no name ("" when it is one): SPEC §2.1
// encodes a name's UTF-8 form, so a name whose bytes are not UTF-8 stands
// as a token DecodeToken refuses, out of shape in every bucket.
func CheckUTF8(name string) string {
	if utf8.ValidString(name) {
		return ""
	}
	return "is not UTF-8 text: its key token (" + EncodeToken(name) + ") would be out of shape in every bucket (SPEC §2.1)"
}

// LenientKey reads a key out of shape as a writer that encodes names
// otherwise than §2.1 says most likely meant it, for saying so beside what
// waits for the key it reads as: an escape in lower-case hex or of a byte
// that stands as itself is read, and with tail the tokens from the n-th on
// are joined with '.' into the last (a name written unencoded, as
// ace.web.db.url for the config key db.url). It gives the key as §2.1
// writes it, and false when the key does not read so (fewer than n tokens,
// more without tail, an empty token, an '=' without two hex digits, a byte
// no token holds, bytes that are not UTF-8) or is in shape.
func LenientKey(key string, n int, tail bool) (string, bool) {
	toks := strings.Split(key, ".")
	if len(toks) < n || len(toks) > n && !tail {
		return "", false
	}
	parts := make([]string, 0, n)
	for i, t := range toks {
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			c := t[j]
			switch {
			case plainByte(c):
				b.WriteByte(c)
			case c == '=' && j+2 < len(t) && isHexAnyCase(t[j+1]) && isHexAnyCase(t[j+2]):
				b.WriteByte(hexAnyCase(t[j+1])<<4 | hexAnyCase(t[j+2]))
				j += 2
			default:
				return "", false
			}
		}
		if t == "" || !utf8.ValidString(b.String()) {
			return "", false
		}
		if i >= n {
			parts[n-1] += "." + b.String()
			continue
		}
		parts = append(parts, b.String())
	}
	canon := EncodeKey(parts...)
	if canon == key {
		return "", false
	}
	return canon, true
}

func isHexAnyCase(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexAnyCase(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
