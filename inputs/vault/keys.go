package vault

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/box"
)

// redactedKeys is all that printing or marshalling Keys ever shows.
const redactedKeys = "vault keys (private half redacted)"

// Keys is the client's X25519 key pair. The private half lives in this
// struct alone: it is never printed, marshalled or returned.
type Keys struct {
	public  *[32]byte
	private *[32]byte
}

// NewKeys makes a fresh key pair (nacl/box, crypto/rand).
func NewKeys() (*Keys, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the vault key pair: %w", err)
	}
	return &Keys{public: pub, private: priv}, nil
}

// PublicBase64 is the public half as the request's public_key field.
func (k *Keys) PublicBase64() string {
	return base64.StdEncoding.EncodeToString(k.public[:])
}

// Open decodes a reply's box (base64 of box.SealAnonymous to our public key)
// and opens it. Its errors never hold the box's content.
func (k *Keys) Open(boxB64 string) ([]byte, error) {
	sealed, err := base64.StdEncoding.DecodeString(boxB64)
	if err != nil {
		return nil, fmt.Errorf("vault box is not base64: %w", err)
	}
	if len(sealed) < box.AnonymousOverhead {
		return nil, fmt.Errorf("vault box is %d bytes, shorter than a sealed box (%d)", len(sealed), box.AnonymousOverhead)
	}
	value, ok := box.OpenAnonymous(nil, sealed, k.public, k.private)
	if !ok {
		return nil, errors.New("vault box does not open with this client's key")
	}
	return value, nil
}

// String never shows the private half.
func (k Keys) String() string { return redactedKeys }

// GoString keeps %#v from printing the fields.
func (k Keys) GoString() string { return redactedKeys }

// Format prints the redacted text for every verb (%d, %x … included).
func (k Keys) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, redactedKeys) }

// MarshalJSON shows the public half only.
func (k Keys) MarshalJSON() ([]byte, error) {
	if k.public == nil {
		return json.Marshal(map[string]string{"keys": redactedKeys})
	}
	return json.Marshal(map[string]string{
		"keys":       redactedKeys,
		"public_key": base64.StdEncoding.EncodeToString(k.public[:]),
	})
}
