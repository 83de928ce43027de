package bus

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
)

// OwnSecret is what this client proves itself to the bus with, which no
// one else is to hold: the nkey seed of its .creds or seed file (not the
// JWT, which its account renews), or its password (given, or in the
// first --nats URL). nil when it has none (a bus with no auth). Whoever
// holds it may ask the vault for every secret of the node's, so a key
// derived from it tells no one more (outputs/stage.ReportKey).
func (o Options) OwnSecret() ([]byte, error) {
	switch {
	case o.Creds != "" || o.NKeySeedFile != "":
		file := o.Creds
		if file == "" {
			file = o.NKeySeedFile
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		kp, err := nkeys.ParseDecoratedNKey(b)
		if err != nil {
			return nil, fmt.Errorf("no nkey seed in %s: %w", file, err)
		}
		seed, err := kp.Seed()
		seed = bytes.Clone(seed) // Wipe zeroes the key pair's own
		kp.Wipe()
		return seed, err
	case o.Password != "":
		return []byte(o.Password), nil
	}
	first, _, _ := strings.Cut(o.URL, ",")
	if u, err := url.Parse(strings.TrimSpace(first)); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			return []byte(p), nil
		}
	}
	return nil, nil
}
