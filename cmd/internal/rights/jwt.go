package rights

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

// Operator is a NATS operator in memory with one account, Account, whose
// users carry their rights in their JWTs: a bus in operator mode, as a real
// fleet runs it with nsc. Its keys never leave the process; only the users'
// .creds files are written out.
type Operator struct {
	claims     *jwt.OperatorClaims
	accountPub string
	accountJWT string
	account    nkeys.KeyPair
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
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = name
	ojwt, err := oc.Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("signing the operator JWT: %w", err)
	}
	if oc, err = jwt.DecodeOperatorClaims(ojwt); err != nil {
		return nil, err
	}
	akp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("making the account key: %w", err)
	}
	apub, err := akp.PublicKey()
	if err != nil {
		return nil, err
	}
	ac := jwt.NewAccountClaims(apub)
	ac.Name = Account
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: maxMemory, DiskStorage: maxDisk, Streams: -1, Consumer: -1}
	ajwt, err := ac.Encode(okp)
	if err != nil {
		return nil, fmt.Errorf("signing the account JWT: %w", err)
	}
	return &Operator{claims: oc, accountPub: apub, accountJWT: ajwt, account: akp}, nil
}

// Configure makes o a server in operator mode trusting this operator, with
// the account in a memory resolver.
func (op *Operator) Configure(o *server.Options) error {
	r := &server.MemAccResolver{}
	if err := r.Store(op.accountPub, op.accountJWT); err != nil {
		return fmt.Errorf("storing the account JWT: %w", err)
	}
	o.TrustedOperators = []*jwt.OperatorClaims{op.claims}
	o.AccountResolver = r
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
	ujwt, err := uc.Encode(op.account)
	if err != nil {
		return nil, fmt.Errorf("signing the JWT of user %s: %w", r.User, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(ujwt, seed)
}
