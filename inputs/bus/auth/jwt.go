package auth

import (
	"fmt"
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
// fleet runs it with nsc. Its keys never leave the process; only the users'
// .creds files are written out.
type Operator struct {
	claims    *jwt.OperatorClaims
	sys, mesh signed
}

// NewOperator makes an operator named name and its account, with JetStream
// enabled within limits.
func NewOperator(name string) (*Operator, error) {
	okp, err := nkeys.CreateOperator()
	if err != nil {
		return nil, fmt.Errorf("making the operator key: %w", err)
	}
	opub, err := okp.PublicKey()
	if err != nil {
		return nil, err
	}
	// JetStream needs a system account in operator mode.
	sys, err := account(okp, "SYS", nil)
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
	mesh, err := account(okp, Account, &jwt.JetStreamLimits{MemoryStorage: maxMemory, DiskStorage: maxDisk, Streams: -1, Consumer: -1})
	if err != nil {
		return nil, err
	}
	return &Operator{claims: oc, sys: sys, mesh: mesh}, nil
}

// signed is an account: its key, public key and JWT.
type signed struct {
	key      nkeys.KeyPair
	pub, jwt string
}

// account makes an account named name signed by the operator okp, with
// JetStream within js (nil: none).
func account(okp nkeys.KeyPair, name string, js *jwt.JetStreamLimits) (signed, error) {
	akp, err := nkeys.CreateAccount()
	if err != nil {
		return signed{}, fmt.Errorf("making the key of account %s: %w", name, err)
	}
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
