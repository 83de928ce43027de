package nodes

import (
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// What a program printed is looked at for every secret the client holds,
// whole or by any 24 bytes of a line (a PEM key's body line, a token's
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

// What is looked for is tuned to what fleets hold (outside audits): a
// secret DSN withholds no ordinary error naming its host and port (21
// bytes in common), a password on a line of its own of 12 bytes or more
// is found printed alone, a value a seed file keeps (the first of the run)
// is looked for two rotations later, and a text said clean is looked at
// again once a secret that quotes it is held.
func TestQuotesSecretFindsWhatFilesMayHoldAndNotOrdinaryErrors(t *testing.T) {
	m := keysRig(t, "k=${secret:k}\nb=${secret:blank}\n")
	m.SetSecret("own/k/k", []byte("postgres://app:Zq9Xv2Lp8Rt4@db.mesh.internal:5432/app"), time.Time{})
	if m.QuotesSecret("could not connect to db.mesh.internal:5432: connection refused") {
		t.Error("an error naming the DSN's host and port is withheld")
	}
	if !m.QuotesSecret("bad url app:Zq9Xv2Lp8Rt4@db.mesh.internal") {
		t.Error("24 bytes of the DSN, its password in them, are not found")
	}
	m.SetSecret("own/k/k", []byte("app\nZq9Xv2Lp8Rt4mK\n"), time.Time{})
	if !m.QuotesSecret("auth failed: app / Zq9Xv2Lp8Rt4mK") {
		t.Error("a 14-byte line of the secret, printed alone, is not found")
	}
	text := "seed says initial=V1-seedpass-AAAA-1111-bbbb-2222"
	m.SetSecret("own/k/blank", []byte("V0-unrelated"), time.Time{})
	if m.QuotesSecret(text) {
		t.Fatal("the text is withheld before any secret quotes it")
	}
	m.SetSecret("own/k/blank", []byte("V1-seedpass-AAAA-1111-bbbb-2222"), time.Time{})
	if !m.QuotesSecret(text) {
		t.Error("a text said clean is not looked at again once a secret it quotes is held")
	}
	m2 := NewNodeGraph("ace")
	registryAll(m2)
	m2.Put(spec.AssignmentsBucket, "ace.k", planJSON("ace", "k", Plan{
		Files:   []FileSpec{{Path: "/etc/k.seed", Template: "t", Form: FormSeed}},
		Secrets: []SecretSpec{{Name: "blank"}},
	}))
	m2.SetArchive("k", digestA, map[string][]byte{"t": []byte("initial=${secret:blank}\n")})
	m2.Stabilize()
	for _, v := range []string{"V1-seedpass-AAAA-1111-bbbb-2222", "V2-seedpass-CCCC-3333-dddd-4444", "V3-seedpass-EEEE-5555-ffff-6666"} {
		m2.SetSecret("own/k/blank", []byte(v), time.Time{})
	}
	if !m2.QuotesSecret(text) {
		t.Error("the first value of the run (a seed file keeps it) is not looked for two rotations later")
	}
}
