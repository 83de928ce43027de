package stage

import (
	"crypto/hkdf"
	"crypto/sha256"
)

// ReportKey is the key of the digests of secret-bearing files in node's
// reports (SPEC §5.3: hmac-sha256 under a key the client keeps in
// memory), derived from the client's own bus secret (bus.Options.OwnSecret):
// made again alike at every start and never written anywhere, so that a
// restart that changes nothing puts no report again, and one that finds
// a file moved while it was down says so. A key of each run's own could
// do neither: a file found as sent could not be told from one written by
// a fill whose report the last run never put. nil when there is no bus
// secret (a bus with no auth, a password or a token: bus.Options.OwnSecret):
// New then makes a random key, and each start reports every
// secret-bearing file again once.
func ReportKey(busSecret []byte, node string) ([]byte, error) {
	if len(busSecret) == 0 {
		return nil, nil
	}
	return hkdf.Key(sha256.New, busSecret, []byte("mesh-provisioner report digests"), node, 32)
}
