package bus

import (
	"bytes"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
)

// OwnSecret is what this client proves itself to the bus with, which no
// one else is to hold: the nkey seed of its .creds or seed file (not the
// JWT, which its account renews). nil when it has none: no auth, or a
// password or token, which people choose: a key derived from one with no
// work factor let a reader of reports test guesses of it offline (an
// outside audit: 360,000 a second), and the password opens the node's
// every vault secret. Whoever holds the seed may ask the vault for every
// secret of the node, so a key derived from it tells no one more
// (outputs/stage.ReportKey).
func (o Options) OwnSecret() ([]byte, error) {
	file := o.Creds
	if file == "" {
		file = o.NKeySeedFile
	}
	if file == "" {
		return nil, nil
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
}
