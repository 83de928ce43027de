package nodes

import (
	"strings"
	"testing"
	"time"
)

// What a program printed is looked at for every secret the client holds,
// whole or by any 16 bytes of a line (a PEM key's body line, a token's
// first 40 bytes), not by shorter runs, nor by a PEM armour line.
func TestQuotesSecretFindsAHeldValueOrALongLineOfIt(t *testing.T) {
	m := keysRig(t, "k=${secret:k}\nb=${secret:blank}\n")
	body := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 2) // 64 bytes
	m.SetSecret("own/k/k", []byte("-----BEGIN PRIVATE KEY-----\n"+body+"\n-----END PRIVATE KEY-----\n"), time.Time{})
	for _, c := range []struct {
		text string
		want bool
	}{
		{"app: bad key " + body[:40] + "...", true},            // a part of a line (an outside audit: a token's first 40 bytes)
		{"app: bad key " + body[:15] + "...", false},           // fewer than 16 bytes of it
		{"app: line 2 of the key: " + body + " refused", true}, // a whole line of 16 bytes or more
		{"app: -----END PRIVATE KEY-----", false},              // every PEM key has it
		{"app: exit status 1", false},
		{"app: value '  ' blank", false},                          // the blank secret's value is spaces: too short to look for
		{"the key is -----BEGIN PRIVATE KEY-----\n" + body, true}, // its body line after the armour
	} {
		if got := m.QuotesSecret(c.text); got != c.want {
			t.Errorf("QuotesSecret(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	m.SetSecret("own/k/blank", []byte("s3cr3t-tok"), time.Time{})
	if !m.QuotesSecret("token s3cr3t-tok refused") {
		t.Error("a held value, whole, not found")
	}
	// The vault refuses it since (an outside audit: "key <value> has
	// expired" withheld at the first refusal, said at the next ask): the
	// file on disk still holds it, and a program or the vault may quote it.
	m.SecretFailed("own/k/blank", "refused", time.Time{})
	if !m.QuotesSecret("key s3cr3t-tok has expired") {
		t.Error("the value held last, before a refusal, is not looked for")
	}
	m.SecretFailed("own/k/blank", "refused again", time.Time{})
	if !m.QuotesSecret("key s3cr3t-tok has expired") {
		t.Error("the value held last is not looked for after a second refusal")
	}
	m.SetSecret("own/k/blank", []byte("rotated-tok"), time.Time{})
	m.SetSecret("own/k/blank", []byte("rotated-again"), time.Time{})
	if m.QuotesSecret("token s3cr3t-tok refused") {
		t.Error("a value two rotations old, on no disk, is still looked for")
	}
	if !m.QuotesSecret("token rotated-tok refused") || !m.QuotesSecret("token rotated-again refused") {
		t.Error("the value held and the one before it are not both looked for")
	}
}
