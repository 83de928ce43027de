package daemon

import (
	"context"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/inputs/vault"
)

// askState is what the daemon knows of asking the vault for one name.
type askState struct {
	attempt  int
	inflight bool
	again    bool // asked to ask again while an ask was under way
}

type vaultResult struct {
	name string
	res  vault.Result
	at   time.Time
}

type askAgain struct{ name string }

// ask asks the vault for name once (unless an ask is under way).
func (d *Daemon) ask(ctx context.Context, name string) {
	if !d.mesh.WantsSecret(name) {
		delete(d.asks, name)
		return
	}
	st := d.asks[name]
	if st == nil {
		st = &askState{}
		d.asks[name] = st
	}
	if st.inflight {
		return
	}
	st.inflight = true
	module := moduleOfSecret(name)
	go func() {
		at := time.Now()
		res := d.vault.Ask(ctx, name, module)
		d.send(ctx, vaultResult{name: name, res: res, at: at})
	}()
}

// askFresh asks again now, as for a new name (on secret-changed).
func (d *Daemon) askFresh(ctx context.Context, name string) {
	st := d.asks[name]
	if st != nil && st.inflight {
		st.again = true
		return
	}
	if st != nil {
		st.attempt = 0
	}
	d.ask(ctx, name)
}

func (d *Daemon) onVault(ctx context.Context, r vaultResult) {
	st := d.asks[r.name]
	if st == nil || !d.mesh.WantsSecret(r.name) {
		delete(d.asks, r.name)
		return
	}
	st.inflight = false
	d.metrics.vaultAsks.WithLabelValues(r.res.Outcome.String()).Inc()
	at := r.at.Format("15:04:05")
	switch r.res.Outcome {
	case vault.Sealed:
		st.attempt = 0
		d.mesh.SetSecret(r.name, r.res.Value)
	case vault.Refused:
		d.mesh.SecretFailed(r.name, "vault "+r.name+": asked "+at+", refused: "+r.res.Reason)
		d.log.Warn().Str("secret", r.name).Str("reason", r.res.Reason).Msg("the vault refused a secret")
		d.askLater(ctx, r.name, d.cfg.RefusedRetry)
	case vault.Silent:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", no answer within "+d.cfg.VaultTimeout.String())
		d.askLater(ctx, r.name, d.backoff(st))
	case vault.Absent:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", absent")
		if strings.HasPrefix(r.name, "pair/") {
			d.log.Info().Str("secret", r.name).Msg("a consumer's credential is not in the vault yet: left out")
		}
		d.askLater(ctx, r.name, d.backoff(st))
	default:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", "+r.res.Reason)
		d.askLater(ctx, r.name, d.backoff(st))
	}
	if st.again {
		st.again = false
		st.attempt = 0
		d.ask(ctx, r.name)
	}
}

func (d *Daemon) backoff(st *askState) time.Duration {
	b := vault.Backoff{Min: d.cfg.BackoffMin, Max: d.cfg.BackoffMax}
	dl := b.Next(st.attempt)
	st.attempt++
	return dl
}

func (d *Daemon) askLater(ctx context.Context, name string, after time.Duration) {
	time.AfterFunc(after, func() { d.send(ctx, askAgain{name}) })
}

// moduleOfSecret is the module in whose name a vault name is asked: the
// owner of an own/ or provision/ secret, the provider for a pair/.
func moduleOfSecret(name string) string {
	parts := strings.Split(name, "/")
	switch {
	case parts[0] == "own" && len(parts) >= 2:
		return parts[1]
	case parts[0] == "provision" && len(parts) >= 5:
		return parts[4]
	case parts[0] == "pair" && len(parts) >= 2:
		return parts[1]
	}
	return ""
}
