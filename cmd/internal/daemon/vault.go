package daemon

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/vault"
)

// askState is what the daemon knows of asking the vault for one name.
type askState struct {
	attempt  int
	inflight bool
	again    bool          // asked to ask again while an ask was under way
	gen      uint64        // the ask under way or last made; a retry for an older one is dropped
	last     vault.Outcome // the last answer, so the log says only changes
	answered bool          // last holds an answer
}

type vaultResult struct {
	name string
	gen  uint64
	res  vault.Result
	at   time.Time
}

// askAgain is a retry scheduled after an absent, silent or refused answer
// to the ask numbered gen; a newer ask (secret-changed) makes it stale.
type askAgain struct {
	name string
	gen  uint64
}

// askGens numbers every ask (across daemons: only uniqueness matters).
var askGens atomic.Uint64

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
	st.gen = askGens.Add(1)
	st.inflight = true
	module, gen := moduleOfSecret(name), st.gen
	go func() {
		at := time.Now()
		res := d.vault.Ask(ctx, name, module)
		d.send(ctx, vaultResult{name: name, gen: gen, res: res, at: at})
	}()
}

// retry runs a scheduled askAgain unless a newer ask overtook it.
func (d *Daemon) retry(ctx context.Context, e askAgain) {
	st := d.asks[e.name]
	if st == nil || st.gen != e.gen || st.inflight {
		if st != nil && !d.mesh.WantsSecret(e.name) && !st.inflight {
			delete(d.asks, e.name)
		}
		return
	}
	d.ask(ctx, e.name)
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
	if st.gen != r.gen {
		return // an answer to an ask since overtaken
	}
	st.inflight = false
	d.metrics.vaultAsks.WithLabelValues(r.res.Outcome.String()).Inc()
	changed := !st.answered || st.last != r.res.Outcome
	st.last, st.answered = r.res.Outcome, true
	at := r.at.Format("15:04:05")
	pair := strings.HasPrefix(r.name, "pair/")
	switch r.res.Outcome {
	case vault.Sealed:
		st.attempt = 0
		d.mesh.SetSecret(r.name, r.res.Value)
	case vault.Refused:
		d.mesh.SecretFailed(r.name, "vault "+r.name+": asked "+at+", refused: "+r.res.Reason)
		if changed {
			msg := "the vault refused a secret"
			if pair {
				msg = "the vault refused a consumer's credential: the consumer is left out"
			}
			d.log.Warn().Str("secret", r.name).Str("reason", r.res.Reason).Dur("retry_after", d.cfg.RefusedRetry).Msg(msg)
		}
		d.askLater(ctx, r.name, st.gen, d.cfg.RefusedRetry)
	case vault.Silent:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", no answer within "+d.cfg.VaultTimeout.String())
		if changed {
			d.log.Info().Str("secret", r.name).Str("reason", r.res.Reason).Msg("the vault does not answer: asking again with backoff")
		}
		d.askLater(ctx, r.name, st.gen, d.backoff(st))
	case vault.Absent:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", absent")
		if changed {
			msg := "the vault does not hold a secret yet: waiting"
			if pair {
				msg = "a consumer's credential is not in the vault yet: the consumer is left out"
			}
			d.log.Info().Str("secret", r.name).Msg(msg)
		}
		d.askLater(ctx, r.name, st.gen, d.backoff(st))
	default:
		d.mesh.SecretWaiting(r.name, "vault "+r.name+": asked "+at+", "+r.res.Reason)
		if changed {
			d.log.Warn().Str("secret", r.name).Str("reason", r.res.Reason).Msg("asking the vault went wrong: asking again with backoff")
		}
		d.askLater(ctx, r.name, st.gen, d.backoff(st))
	}
	if st.again {
		st.again = false
		st.attempt = 0
		d.ask(ctx, r.name)
	}
}

func (d *Daemon) backoff(st *askState) time.Duration {
	b := backoff.Doubling{Min: d.cfg.BackoffMin, Max: d.cfg.BackoffMax}
	dl := b.Next(st.attempt)
	st.attempt++
	return dl
}

func (d *Daemon) askLater(ctx context.Context, name string, gen uint64, after time.Duration) {
	time.AfterFunc(after, func() { d.send(ctx, askAgain{name: name, gen: gen}) })
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
