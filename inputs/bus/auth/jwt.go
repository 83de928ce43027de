package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// JetStream limits of the account, as examples/nats/server.conf's server.
const (
	maxMemory = 256 << 20
	maxDisk   = 10 << 30
)

// MaxControlLine is the max_control_line a bus in operator mode needs: a
// client's CONNECT carries its user JWT, about 4.5 KB with one provider and
// 0.5 KB more per provider, past nats-server's default of 4 KB (which
// refuses it with "maximum control line exceeded").
const MaxControlLine = 64 << 10

// Operator is a NATS operator in memory with one account, Account, whose
// users carry their rights in their JWTs: a bus in operator mode, as a real
// fleet runs it with nsc. Its keys stay in the process unless LoadOperator
// keeps them in a directory; users get .creds files.
type Operator struct {
	key       nkeys.KeyPair
	claims    *jwt.OperatorClaims
	sys, mesh signed
}

// NewOperator makes an operator named name and its account, with JetStream
// enabled within limits, all with new keys.
func NewOperator(name string) (*Operator, error) {
	var keys [3]nkeys.KeyPair
	var err error
	for i, create := range []func() (nkeys.KeyPair, error){nkeys.CreateOperator, nkeys.CreateAccount, nkeys.CreateAccount} {
		if keys[i], err = create(); err != nil {
			return nil, fmt.Errorf("making a key: %w", err)
		}
	}
	return newOperator(name, keys)
}

// keyFiles are the seeds LoadOperator keeps: the operator's, the system
// account's and the account's.
var keyFiles = [3]string{"operator.nk", "sys.nk", "account.nk"}

// LoadOperator is NewOperator with the keys kept in dir: read when there
// (a bus restarted on the same JetStream store finds its account's streams
// again, as they are stored by account key), else made and written (0600).
func LoadOperator(name, dir string) (*Operator, error) {
	var keys [3]nkeys.KeyPair
	seeds, err := readSeeds(dir)
	if err != nil {
		return nil, err
	}
	if seeds == nil {
		op, err := NewOperator(name)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("operator keys: %w", err)
		}
		for i, kp := range []nkeys.KeyPair{op.key, op.sys.key, op.mesh.key} {
			seed, err := kp.Seed()
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, keyFiles[i]), seed, 0o600); err != nil {
				return nil, fmt.Errorf("writing operator keys: %w", err)
			}
		}
		return op, nil
	}
	for i, seed := range seeds {
		if keys[i], err = nkeys.FromSeed(seed); err != nil {
			return nil, fmt.Errorf("operator key %s: not an nkey seed", filepath.Join(dir, keyFiles[i]))
		}
	}
	return newOperator(name, keys)
}

// readSeeds reads the seeds of keyFiles in dir; nil when none is there.
func readSeeds(dir string) ([][]byte, error) {
	var seeds [][]byte
	for _, f := range keyFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) && len(seeds) == 0 {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("operator keys: %w", err)
		}
		seeds = append(seeds, bytes.TrimSpace(b))
	}
	return seeds, nil
}

// newOperator signs the operator's and the accounts' JWTs with keys
// (operator, system account, account).
func newOperator(name string, keys [3]nkeys.KeyPair) (*Operator, error) {
	okp := keys[0]
	opub, err := okp.PublicKey()
	if err != nil {
		return nil, err
	}
	// JetStream needs a system account in operator mode.
	sys, err := account(okp, keys[1], "SYS", nil)
	if err != nil {
		return nil, err
	}
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = name
	oc.SystemAccount = sys.pub
	ojwt, err := oc.Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("signing the operator JWT: %w", err)
	}
	if oc, err = jwt.DecodeOperatorClaims(ojwt); err != nil {
		return nil, err
	}
	mesh, err := account(okp, keys[2], Account, &jwt.JetStreamLimits{MemoryStorage: maxMemory, DiskStorage: maxDisk, Streams: -1, Consumer: -1})
	if err != nil {
		return nil, err
	}
	return &Operator{key: okp, claims: oc, sys: sys, mesh: mesh}, nil
}

// signed is an account: its key, public key and JWT.
type signed struct {
	key      nkeys.KeyPair
	pub, jwt string
}

// account makes an account named name of key akp signed by the operator okp, with
// JetStream within js (nil: none).
func account(okp, akp nkeys.KeyPair, name string, js *jwt.JetStreamLimits) (signed, error) {
	apub, err := akp.PublicKey()
	if err != nil {
		return signed{}, err
	}
	ac := jwt.NewAccountClaims(apub)
	ac.Name = name
	if js != nil {
		ac.Limits.JetStreamLimits = *js
	}
	ajwt, err := ac.Encode(okp)
	if err != nil {
		return signed{}, fmt.Errorf("signing the JWT of account %s: %w", name, err)
	}
	return signed{key: akp, pub: apub, jwt: ajwt}, nil
}

// Configure makes o a server in operator mode trusting this operator, with
// its accounts (Account and the system account) in a memory resolver, and
// a max_control_line of at least MaxControlLine.
func (op *Operator) Configure(o *server.Options) error {
	r := &server.MemAccResolver{}
	for _, a := range []signed{op.sys, op.mesh} {
		if err := r.Store(a.pub, a.jwt); err != nil {
			return fmt.Errorf("storing an account JWT: %w", err)
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{op.claims}
	o.AccountResolver = r
	o.SystemAccount = op.sys.pub
	if o.MaxControlLine < MaxControlLine {
		o.MaxControlLine = MaxControlLine
	}
	return nil
}

// Creds makes a user of the account with r's rights and returns its .creds
// file (its JWT and nkey seed). expires zero: it never expires.
func (op *Operator) Creds(r spec.Rights, expires time.Time) ([]byte, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("making the key of user %s: %w", r.User, err)
	}
	upub, err := ukp.PublicKey()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(upub)
	uc.Name = r.User
	if !expires.IsZero() {
		uc.Expires = expires.Unix()
	}
	if !r.Unrestricted {
		uc.Pub.Allow.Add(r.PublishAllow()...)
		uc.Sub.Allow.Add(r.SubscribeAllow()...)
		// An empty allow-list in a JWT allows everything: deny instead.
		if len(uc.Pub.Allow) == 0 {
			uc.Pub.Deny.Add(">")
		}
		if len(uc.Sub.Allow) == 0 {
			uc.Sub.Deny.Add(">")
		}
		if r.AllowResponses {
			uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1}
		}
	}
	ujwt, err := uc.Encode(op.mesh.key)
	if err != nil {
		return nil, fmt.Errorf("signing the JWT of user %s: %w", r.User, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(ujwt, seed)
}

// WriteCreds writes a never-expiring .creds file for each user of fleet
// into dir (made 0700 if missing), each 0600 as a real node keeps it, and
// says where each user's is.
func (op *Operator) WriteCreds(dir string, fleet []spec.Rights) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the creds directory: %w", err)
	}
	paths := make(map[string]string, len(fleet))
	for _, r := range fleet {
		c, err := op.Creds(r, time.Time{})
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, r.User+".creds")
		if err := os.WriteFile(p, c, 0o600); err != nil {
			return nil, fmt.Errorf("writing the creds of %s: %w", r.User, err)
		}
		paths[r.User] = p
	}
	return paths, nil
}
