package spec

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

var tokenShape = regexp.MustCompile(`^[-/_=a-zA-Z0-9]+$`)

func TestEncodeToken(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"shell:zsh:normal", "shell=3Azsh=3Anormal"},
		{"a.b", "a=2Eb"},
		{"x=y", "x=3Dy"},
		{"claude-code", "claude-code"},
		{"own/claude_code/API-key9", "own/claude_code/API-key9"},
		{"grüße", "gr=C3=BC=C3=9Fe"},
		{"日", "=E6=97=A5"},
		{"a b*c>d", "a=20b=2Ac=3Ed"},
		{"\x00\x7f", "=00=7F"},
		{"", ""},
	} {
		if got := EncodeToken(c.in); got != c.want {
			t.Errorf("EncodeToken(%q) = %q, want %q", c.in, got, c.want)
		}
		if c.in == "" {
			continue
		}
		got, err := DecodeToken(c.want)
		if err != nil || got != c.in {
			t.Errorf("DecodeToken(%q) = %q, %v; want %q", c.want, got, err, c.in)
		}
	}
}

func TestDecodeTokenOutOfShape(t *testing.T) {
	for _, c := range []struct{ tok, why string }{
		{"", "empty token"},
		{"=41", "stands as itself"},       // A escaped
		{"=FF", "not UTF-8"},              // a name is UTF-8 text (SPEC §2.1)
		{"a=C3", "not UTF-8"},             // half of ü
		{"a=2D", "stands as itself"},      // - escaped
		{"=2F", "stands as itself"},       // / escaped
		{"shell=3azsh", "upper-case hex"}, // lower-case hex
		{"abc=", "upper-case hex"},
		{"abc=4", "upper-case hex"},
		{"=", "upper-case hex"},
		{"=G0", "upper-case hex"},
		{"=4=41", "upper-case hex"},
		{"a*b", "may not stand"},
		{"a>b", "may not stand"},
		{"a b", "may not stand"},
		{"a.b", "may not stand"},
		{"é", "may not stand"},
	} {
		got, err := DecodeToken(c.tok)
		if err == nil {
			t.Errorf("DecodeToken(%q) = %q, want an error", c.tok, got)
			continue
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("DecodeToken(%q) error %q does not say %q", c.tok, err, c.why)
		}
	}
}

func TestEncodeDecodeKey(t *testing.T) {
	key := EncodeKey("ace", "claude-code", "shell:zsh:normal")
	if key != "ace.claude-code.shell=3Azsh=3Anormal" {
		t.Fatalf("EncodeKey = %q", key)
	}
	parts, err := DecodeKey(key, 3)
	if err != nil || len(parts) != 3 || parts[2] != "shell:zsh:normal" {
		t.Fatalf("DecodeKey(%q, 3) = %q, %v", key, parts, err)
	}
	if parts, err := DecodeKey(key, -1); err != nil || len(parts) != 3 {
		t.Fatalf("DecodeKey(%q, -1) = %q, %v", key, parts, err)
	}
	for _, c := range []struct {
		key string
		n   int
		why string
	}{
		{key, 2, "has 3 tokens, want 2"},
		{"ace", 2, "has 1 tokens, want 2"},
		{"ace..x", 3, "empty token"},
		{".ace", -1, "empty token"},
		{"ace.", 2, "empty token"},
		{"", -1, "empty token"},
		{"ace.=41", 2, "stands as itself"},
	} {
		_, err := DecodeKey(c.key, c.n)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("DecodeKey(%q, %d) error = %v, want one saying %q", c.key, c.n, err, c.why)
		}
	}
}

func TestTokenRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s string
		switch rapid.IntRange(0, 2).Draw(t, "source") {
		case 0:
			s = rapid.String().Draw(t, "utf8")
		case 1:
			s = rapid.StringMatching(`[a-zA-Z0-9.:=/ _-]{0,12}`).Draw(t, "near")
		default:
			s = string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes"))
		}
		enc := EncodeToken(s)
		if s == "" {
			if enc != "" {
				t.Fatalf("EncodeToken(\"\") = %q", enc)
			}
			if _, err := DecodeToken(enc); err == nil {
				t.Fatalf("the empty token decoded")
			}
			return
		}
		if !tokenShape.MatchString(enc) {
			t.Fatalf("EncodeToken(%q) = %q, not a key token", s, enc)
		}
		dec, err := DecodeToken(enc)
		if !utf8.ValidString(s) { // names are UTF-8 (SPEC §2.1): such a token is out of shape
			if err == nil {
				t.Fatalf("DecodeToken(%q) = %q: bytes that are not UTF-8 decoded", enc, dec)
			}
			return
		}
		if err != nil || dec != s {
			t.Fatalf("DecodeToken(EncodeToken(%q)) = %q, %v", s, dec, err)
		}
		// A key of several such parts splits back into them.
		parts := []string{s, s + ".x", "y." + s}
		got, err := DecodeKey(EncodeKey(parts...), 3)
		if err != nil || got[0] != parts[0] || got[1] != parts[1] || got[2] != parts[2] {
			t.Fatalf("DecodeKey(EncodeKey(%q)) = %q, %v", parts, got, err)
		}
	})
}

func FuzzDecodeToken(f *testing.F) {
	for _, s := range []string{"shell=3Azsh=3Anormal", "a=2Eb", "x=3Dy", "=41", "=3a", "abc=", "=4", "", "a*b", "=C3=BC", "=FF=00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		dec, err := DecodeToken(tok)
		if err != nil {
			return
		}
		if re := EncodeToken(dec); re != tok {
			t.Fatalf("DecodeToken(%q) = %q, which encodes to %q", tok, dec, re)
		}
		if !tokenShape.MatchString(tok) {
			t.Fatalf("DecodeToken accepted %q, not a key token", tok)
		}
	})
}

func TestGivenEncoded(t *testing.T) {
	for name, want := range map[string]string{"a=2Eb": "a.b", "shell=3Azsh": "shell:zsh", "x=3Dy": "x=y",
		"a.b": "", "x=y": "", "ace": "", "=41": "", "a=2e": "", "=FF": ""} {
		got, ok := GivenEncoded(name)
		if got != want || ok != (want != "") {
			t.Errorf("GivenEncoded(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestCheckUTF8(t *testing.T) {
	for name, bad := range map[string]bool{"ace": false, "Ünï.b d": false, "a\xff": true, "\xc3": true} {
		if why := CheckUTF8(name); (why != "") != bad {
			t.Errorf("CheckUTF8(%q) = %q", name, why)
		}
	}
}

func TestLenientKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		n    int
		tail bool
		want string
	}{
		{"ace.web.db.url", 3, true, "ace.web.db=2Eurl"},
		{"ace.claude=2Dcode.gitea-read", 3, false, "ace.claude-code.gitea-read"},
		{"ace.web.shell=3azsh", 3, true, "ace.web.shell=3Azsh"},
		{"ace.web.k", 3, true, ""},    // in shape
		{"ace.web", 3, true, ""},      // too few
		{"ace.a.b.c.d", 4, false, ""}, // too many without tail
		{"ace.web.x=4", 3, true, ""},  // '=' without two hex digits
		{"ace.web.=FF", 3, true, ""},  // not UTF-8
		{"ace.web.=e2=82=ac", 3, true, "ace.web.=E2=82=AC"},
	} {
		got, ok := LenientKey(c.key, c.n, c.tail)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("LenientKey(%q, %d, %v) = %q, %v; want %q", c.key, c.n, c.tail, got, ok, c.want)
		}
	}
}
