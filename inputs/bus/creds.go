package bus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/nats-io/jwt/v2"
)

// CheckCreds looks at the .creds file at path before a connection uses it,
// so a bad one is named at once instead of as a refused connection retried
// forever: missing, unreadable, malformed (no user JWT and seed) and
// expired are errors, and so are creds whose user may not hear replies on
// inbox (the caller's InboxPrefix; "" checks nothing: checkInbox). warning
// is not empty when the file is readable by
// its group or by others, which a file holding a private key must not be.
// No error or warning carries the file's contents.
func CheckCreds(path string, now time.Time, inbox string) (warning string, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("creds file %s is missing", path)
	}
	if err != nil {
		return "", fmt.Errorf("creds file %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("creds file %s is unreadable: %w", path, err)
	}
	// ParseDecoratedJWT hands back a file without the JWT block whole, as
	// if it were a bare JWT: one that decodes as no JWT at all is not a
	// creds file (the wrong file given to --creds), said so with what one holds.
	tok, err := jwt.ParseDecoratedJWT(data)
	if _, gerr := jwt.DecodeGeneric(tok); err != nil || gerr != nil {
		return "", fmt.Errorf("creds file %s is malformed: no user JWT in it (a .creds file holds a %q block and the user's nkey seed)",
			path, "-----BEGIN NATS USER JWT-----")
	}
	claims, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return "", fmt.Errorf("creds file %s is malformed: its JWT is not a user JWT", path)
	}
	if _, err := jwt.ParseDecoratedUserNKey(data); err != nil {
		return "", fmt.Errorf("creds file %s is malformed: no user nkey seed in it", path)
	}
	if claims.Expires != 0 && now.Unix() >= claims.Expires {
		return "", fmt.Errorf("creds file %s has expired: user %s's JWT expired at %s", path, claims.Name,
			time.Unix(claims.Expires, 0).UTC().Format(time.RFC3339))
	}
	if err := checkInbox(path, claims, inbox); err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		warning = fmt.Sprintf("creds file %s is readable by its group or others (mode %04o): it holds a private key; chmod 600 it", path, fi.Mode().Perm())
	}
	return warning, nil
}
