package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/crypto/nacl/box"
)

func seal(t *testing.T, k *Keys, value []byte) string {
	t.Helper()
	pub, err := base64.StdEncoding.DecodeString(k.PublicBase64())
	if err != nil || len(pub) != 32 {
		t.Fatalf("public key %q is not base64 of 32 bytes", k.PublicBase64())
	}
	var p [32]byte
	copy(p[:], pub)
	sealed, err := box.SealAnonymous(nil, value, &p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sealed)
}

func TestKeysOpen(t *testing.T) {
	k, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	value := []byte("open-me-4242")
	got, err := k.Open(seal(t, k, value))
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("Open = %q, %v; want %q", got, err, value)
	}

	other, _ := NewKeys()
	for _, b64 := range []string{seal(t, other, value), "not base64!", base64.StdEncoding.EncodeToString([]byte("short"))} {
		_, err := k.Open(b64)
		if err == nil {
			t.Fatalf("Open(%q) opened", b64)
		}
		if strings.Contains(err.Error(), string(value)) {
			t.Fatalf("error %q holds the plaintext", err)
		}
	}
}

func TestKeysNeverShowPrivateHalf(t *testing.T) {
	k, _ := NewKeys()
	priv := k.private[:]
	forms := []string{
		string(priv),
		hex.EncodeToString(priv),
		strings.ToUpper(hex.EncodeToString(priv)),
		base64.StdEncoding.EncodeToString(priv),
		base64.RawStdEncoding.EncodeToString(priv),
		strings.Trim(fmt.Sprint(priv), "[]"),
	}
	js, _ := json.Marshal(k)
	jsv, _ := json.Marshal(*k)
	outputs := []string{string(js), string(jsv), k.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%X", "%q"} {
		outputs = append(outputs, fmt.Sprintf(verb, k), fmt.Sprintf(verb, *k),
			fmt.Sprintf(verb, struct{ K *Keys }{k}), fmt.Sprintf(verb, []Keys{*k}))
	}
	for _, out := range outputs {
		for _, f := range forms {
			if strings.Contains(out, f) {
				t.Fatalf("output %q shows the private half", out)
			}
		}
	}
	if !strings.Contains(string(js), k.PublicBase64()) {
		t.Errorf("JSON %s does not show the public half", js)
	}
	if k.String() != "vault keys (private half redacted)" {
		t.Errorf("String() = %q", k.String())
	}
}

func TestResultNeverShowsValue(t *testing.T) {
	value := "result-value-9c7f"
	r := Result{Outcome: Sealed, Value: []byte(value)}
	js, _ := json.Marshal(r)
	outputs := []string{string(js), r.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		outputs = append(outputs, fmt.Sprintf(verb, r), fmt.Sprintf(verb, &r), fmt.Sprintf(verb, []Result{r}))
	}
	for _, out := range outputs {
		for _, f := range []string{value, hex.EncodeToString([]byte(value)), base64.StdEncoding.EncodeToString([]byte(value)), strings.Trim(fmt.Sprint([]byte(value)), "[]")} {
			if strings.Contains(out, f) {
				t.Fatalf("output %q shows the value", out)
			}
		}
	}
	if got := (Result{Outcome: Refused, Reason: "no"}).String(); got != "refused: no" {
		t.Errorf("refused String() = %q", got)
	}
}

// A reason the vault gives is cut at a character boundary past maxReason
// bytes, saying how long it was: it goes into logs and reports.
func TestAVaultsReasonIsCut(t *testing.T) {
	if got := cutReason("short"); got != "short" {
		t.Errorf("short reason: %q", got)
	}
	long := strings.Repeat("é", 900) // two bytes each: 1800
	got := cutReason(long)
	if !strings.HasSuffix(got, "… (cut: 1800 bytes in all)") || len(got) > maxReason+40 || !utf8.ValidString(got) {
		t.Errorf("long reason cut to %d bytes: %.80q…", len(got), got)
	}
}

// Outcomes lists each outcome once, each named (the metrics show a counter
// at 0 for each name), and nothing past the last.
func TestOutcomesListsEveryNamedOutcome(t *testing.T) {
	all := Outcomes()
	for i, o := range all {
		if o != Outcome(i) || strings.HasPrefix(o.String(), "outcome(") {
			t.Errorf("Outcomes()[%d] = %v", i, o)
		}
	}
	if next := Outcome(len(all)).String(); !strings.HasPrefix(next, "outcome(") {
		t.Errorf("outcome %d is named %q but not listed by Outcomes", len(all), next)
	}
}
