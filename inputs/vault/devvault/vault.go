package devvault

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/crypto/nacl/box"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The wire, written here on its own (not shared with package vault) so the
// tests of the pair check the protocol rather than a common struct; the
// subjects are the SPEC's (package spec).
const (
	subjectGetAll = spec.VaultVerb + ".>"
	queueGroup    = "mesh-vault"
	checkTimeout  = 2 * time.Second
	// announceTimeout bounds the flush after a secret-changed publish when
	// the caller's context sets no deadline.
	announceTimeout = 5 * time.Second
)

type request struct {
	Secret     string `json:"secret"`
	Node       string `json:"node"`
	Module     string `json:"module"`
	PublicKey  string `json:"public_key"`
	Credential string `json:"credential,omitempty"`
}

type reply struct {
	Status string `json:"status"`
	Box    string `json:"box,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Ask is one request the vault received, as tests count them. It never
// holds a value.
type Ask struct {
	Subject string
	Secret  string
	Node    string // the node the request names
	Module  string
	// Credential is the credential form the request carried ("" for none).
	Credential string
	Outcome    string // sealed, absent, refused or silent (not answered)
	Reason     string
}

// Vault is the in-memory dev vault.
type Vault struct {
	log zerolog.Logger

	mu       sync.Mutex
	values   map[string][]byte
	refusals map[string]string
	forms    map[string]string // credential form held for a provision/ name
	silent   bool
	silentOn map[string]bool // names whose asks are taken and not answered
	asks     []Ask
	counts   map[string]int
	nc       *nats.Conn
	js       jetstream.JetStream
	sub      *nats.Subscription

	// Requests are answered side by side, up to answering at once: each
	// checks the asker's rights with reads of the bus, and one at a time
	// they held a 10,000-file node's cold start ~0.6 s behind its last
	// module's ~200 asks (3-6 ms each). Stop waits for those under way.
	slots    chan struct{}
	underWay sync.WaitGroup
}

// answering is how many requests the vault answers at once.
const answering = 16

// serving, when set (by a test), is called with each request's secret as
// its answer begins.
var serving func(secret string)

// New makes an empty vault logging to log (names and outcomes, never values).
func New(log zerolog.Logger) *Vault {
	return &Vault{
		log:      log.With().Str("component", "devvault").Logger(),
		values:   map[string][]byte{},
		refusals: map[string]string{},
		forms:    map[string]string{},
		silentOn: map[string]bool{},
		counts:   map[string]int{},
		slots:    make(chan struct{}, answering),
	}
}

// Set stores value under the vault name and, once started, publishes
// mesh-vault.secret-changed naming it (the value never leaves sealed).
func (v *Vault) Set(ctx context.Context, name string, value []byte) {
	v.mu.Lock()
	v.values[name] = append([]byte(nil), value...)
	nc := v.nc
	v.mu.Unlock()
	v.log.Info().Str("secret", name).Msg("secret set")
	v.announce(ctx, nc, name)
}

// Delete forgets the vault name (asks for it are then absent) and, once
// started, publishes mesh-vault.secret-changed naming it.
func (v *Vault) Delete(name string) {
	v.mu.Lock()
	_, had := v.values[name]
	delete(v.values, name)
	nc := v.nc
	v.mu.Unlock()
	if !had {
		return
	}
	v.log.Info().Str("secret", name).Msg("secret deleted")
	v.announce(context.Background(), nc, name)
}

// announce publishes secret-changed naming name and waits for the server
// to have it (a flush), so a test that sets a secret and then watches sees
// the event. A ctx without a deadline (Delete's, or a caller's Background)
// is given announceTimeout: nats.go refuses to flush on one, and that
// refusal is no failure of the publish. Only a publish or flush that did
// fail is warned of.
func (v *Vault) announce(ctx context.Context, nc *nats.Conn, name string) {
	if nc == nil {
		return
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, announceTimeout)
		defer cancel()
	}
	payload, _ := json.Marshal(map[string]string{"secret": name})
	err := nc.Publish(spec.VaultChangedSubject, payload)
	if err == nil {
		err = nc.FlushWithContext(ctx)
	}
	if err != nil {
		v.log.Warn().Str("secret", name).Err(err).Msg("publishing " + spec.VaultChangedSubject)
	}
}

// SetForm records the credential form the provider issued the provision/
// name for: an ask of it carrying another form is refused ("" forgets it).
//
// The dev vault checks the form it is sent (SPEC §4.2 r2) so the lab and
// tests catch a client that leaves it out or sends the wrong one: a
// provision/ request without a credential form is refused; one whose form
// differs from the one SetForm recorded for that name is refused (with no
// form recorded, any non-empty form is taken); any other request (own/,
// pair/) that carries a form is refused, since only a provisions entry's
// request carries one.
func (v *Vault) SetForm(name, form string) { v.setOrForget(v.forms, name, form) }

// Refuse makes every ask for name refused with reason, whatever the rights
// (reason "" lifts it).
func (v *Vault) Refuse(name, reason string) { v.setOrForget(v.refusals, name, reason) }

// setOrForget sets m[name] = value under the lock, or deletes it when
// value is "".
func (v *Vault) setOrForget(m map[string]string, name, value string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if value == "" {
		delete(m, name)
		return
	}
	m[name] = value
}

// SetSilent makes the vault receive asks without answering them (true) or
// answer again (false).
func (v *Vault) SetSilent(silent bool) {
	v.mu.Lock()
	v.silent = silent
	v.mu.Unlock()
}

// SetSilentFor makes the vault receive asks for name without answering
// them (true) or answer them again (false), whatever SetSilent says of
// the others: a vault that answers for some names and not for others.
func (v *Vault) SetSilentFor(name string, silent bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if silent {
		v.silentOn[name] = true
		return
	}
	delete(v.silentOn, name)
}

// Start answers mesh-vault.get.> in the queue group mesh-vault. js reads the
// assignments; nil makes one on nc.
func (v *Vault) Start(nc *nats.Conn, js jetstream.JetStream) error {
	if nc == nil {
		return errors.New("starting the dev vault: no NATS connection")
	}
	if js == nil {
		var err error
		if js, err = jetstream.New(nc); err != nil {
			return fmt.Errorf("starting the dev vault: jetstream: %w", err)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sub != nil {
		return errors.New("starting the dev vault: already started")
	}
	sub, err := nc.QueueSubscribe(subjectGetAll, queueGroup, v.handle)
	if err != nil {
		return fmt.Errorf("starting the dev vault: subscribing %s: %w", subjectGetAll, err)
	}
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("starting the dev vault: flushing the subscription to %s: %w", subjectGetAll, err)
	}
	v.nc, v.js, v.sub = nc, js, sub
	v.log.Info().Str("subject", subjectGetAll).Msg("dev vault answering")
	return nil
}

// Stop stops answering. The connection is the caller's.
func (v *Vault) Stop() {
	v.mu.Lock()
	sub, nc := v.sub, v.nc
	v.nc, v.js, v.sub = nil, nil, nil
	v.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
		// A round trip, so the server has dropped the interest when Stop
		// returns: an ask after it gets "no responders" at once.
		_ = nc.FlushTimeout(2 * time.Second)
		v.underWay.Wait() // and no reply leaves after it
		v.log.Info().Msg("dev vault stopped")
	}
}

// Asks is every request received so far, in the order answered (a
// client's asks of one name are answered in the order made: it asks again
// only once answered).
func (v *Vault) Asks() []Ask {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]Ask(nil), v.asks...)
}

// AskCount is how many requests named the vault name (answered or not).
func (v *Vault) AskCount(name string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.counts[name]
}

// handle is the subscription's callback: the request is answered on a
// goroutine of its own once a slot is free (the callback waits for one, so
// the subscription holds what is not under way).
func (v *Vault) handle(m *nats.Msg) {
	v.slots <- struct{}{}
	v.mu.Lock()
	if v.sub == nil { // stopped meanwhile: Stop waits for nothing more
		v.mu.Unlock()
		<-v.slots
		return
	}
	v.underWay.Add(1)
	v.mu.Unlock()
	go func() {
		defer func() {
			<-v.slots
			v.underWay.Done()
		}()
		v.serve(m)
	}()
}

// serve answers one request.
func (v *Vault) serve(m *nats.Msg) {
	if why := foreignReply(m.Subject, m.Reply); why != "" {
		v.log.Warn().Str("subject", m.Subject).Str("reply", spec.Cut(m.Reply, 200)).Str("why", why).Msg("vault ask not answered")
		return
	}
	ask := Ask{Subject: m.Subject}
	var req request
	if err := json.Unmarshal(m.Data, &req); err != nil {
		ask.Outcome, ask.Reason = "refused", "request is not the vault request JSON"
	} else {
		ask.Secret, ask.Node, ask.Module, ask.Credential = req.Secret, req.Node, req.Module, req.Credential
	}
	if serving != nil {
		serving(ask.Secret)
	}
	v.mu.Lock()
	silent, js := v.silent || v.silentOn[ask.Secret], v.js
	v.mu.Unlock()

	var rep reply
	switch {
	case ask.Outcome != "":
		rep = reply{Status: "refused", Reason: ask.Reason}
	case silent:
		ask.Outcome = "silent"
	default:
		var err error
		rep, err = v.answer(m.Subject, req, js)
		if err != nil {
			ask.Outcome, ask.Reason = "silent", err.Error()
		} else {
			ask.Outcome, ask.Reason = rep.Status, rep.Reason
		}
	}

	v.mu.Lock()
	v.asks = append(v.asks, ask)
	v.counts[ask.Secret]++
	v.mu.Unlock()
	ev := v.log.Info()
	if ask.Outcome == "silent" && ask.Reason != "" {
		ev = v.log.Warn()
	}
	ev.Str("subject", ask.Subject).Str("secret", ask.Secret).Str("node", ask.Node).
		Str("module", ask.Module).Str("outcome", ask.Outcome).Str("reason", ask.Reason).Msg("vault ask")

	if ask.Outcome == "silent" || m.Reply == "" {
		return
	}
	data, _ := json.Marshal(rep)
	if err := m.Respond(data); err != nil {
		v.log.Warn().Str("secret", ask.Secret).Err(err).Msg("replying to a vault ask")
	}
}

// answer decides the reply. An error means the rights could not be checked
// just now: no reply, the client asks again.
func (v *Vault) answer(subject string, req request, js jetstream.JetStream) (reply, error) {
	refused := func(format string, a ...any) (reply, error) {
		return reply{Status: "refused", Reason: fmt.Sprintf(format, a...)}, nil
	}
	node, err := spec.VaultGetNode(subject)
	if err != nil {
		return refused("%v", err)
	}
	if req.Secret == "" {
		return refused("request names no secret")
	}
	if req.Node != node {
		return refused("request names node %q but was sent on %s by node %q", req.Node, subject, node)
	}
	key, err := base64.StdEncoding.DecodeString(req.PublicKey)
	if err != nil || len(key) != 32 {
		return refused("public_key is not the base64 of a 32-byte key")
	}

	v.mu.Lock()
	forced, isForced := v.refusals[req.Secret]
	form, hasForm := v.forms[req.Secret]
	v.mu.Unlock()
	if isForced {
		return refused("%s", forced)
	}
	if js == nil {
		return reply{}, errors.New("dev vault is stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	why, err := rights(ctx, js, node, req.Secret)
	if err != nil {
		return reply{}, err
	}
	if why != "" {
		return refused("%s", why)
	}
	switch {
	case !spec.IsProvisionName(req.Secret) && req.Credential != "":
		return refused("request for %s carries a credential form %q; only a provisions entry's (provision/…) does", req.Secret, req.Credential)
	case !spec.IsProvisionName(req.Secret):
	case req.Credential == "":
		return refused("request for %s carries no credential form", req.Secret)
	case hasForm && req.Credential != form:
		return refused("%s is issued as credential form %q, asked as %q", req.Secret, form, req.Credential)
	}

	v.mu.Lock()
	value, ok := v.values[req.Secret]
	v.mu.Unlock()
	if !ok {
		return reply{Status: "absent"}, nil
	}
	var pub [32]byte
	copy(pub[:], key)
	sealed, err := box.SealAnonymous(nil, value, &pub, rand.Reader)
	if err != nil {
		return reply{}, fmt.Errorf("sealing %s: %w", req.Secret, err)
	}
	return reply{Status: "sealed", Box: base64.StdEncoding.EncodeToString(sealed)}, nil
}
