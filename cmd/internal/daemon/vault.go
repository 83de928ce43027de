package daemon

import (
	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// onVault hands the vault's answer for a name to the mesh and logs what
// changed (the asker asks again on its own).
func (d *Daemon) onVault(a vault.Answer) {
	if !d.mesh.WantsSecret(a.Name) {
		return // no longer read: the asker drops it after this batch
	}
	d.metrics.VaultAsked(a.Result.Outcome.String())
	pair := spec.IsPairName(a.Name)
	r := a.Result
	if r.Reason != "" && d.mesh.QuotesSecret(r.Reason) {
		// The vault's text (a refusal's reason) goes to the module's
		// report, its need, explain and the log: one quoting a secret this
		// client holds ("key <value> has expired", an outside audit) is not
		// said, as the node-engine's error text is not.
		r.Reason = "the vault's reason is not said: it quotes a secret this client holds"
	}
	if (r.Outcome == vault.Silent || r.Outcome == vault.Error) && d.mesh.VaultAnswered(a.Name) {
		// Asking again (the bus came back, the vault said it changed) did
		// not get through: what the vault last said (the value held, its
		// absence, its refusal) stays until it answers, rather than a
		// reconnect's ask, sent before the vault is back, turning applied
		// modules waiting and filling them again, or moving a need that
		// waits on an absent secret to "no answer" and back (SPEC §5.2).
		if a.Changed {
			d.log.Info().Str("secret", a.Name).Str("reason", r.Reason).Msg("asking the vault again did not get through: keeping what it last said, asking again with backoff")
		}
		return
	}
	switch r.Outcome {
	case vault.Sealed:
		d.mesh.SetSecret(a.Name, r.Value, a.At)
		if pair && !nodes.ListableCredential(r.Value) {
			d.log.Warn().Str("secret", a.Name).Msg("a consumer's credential is not UTF-8 text, which a consumers list cannot carry: the consumer is left out")
		}
	case vault.Refused:
		d.mesh.SecretFailed(a.Name, "vault "+a.Name+": refused: "+r.Reason, a.At)
		if a.Changed {
			msg := "the vault refused a secret"
			if pair {
				msg = "the vault refused a consumer's credential: the consumer is left out"
			}
			d.log.Warn().Str("secret", a.Name).Str("reason", r.Reason).Dur("retry_after", d.cfg.RefusedRetry).Msg(msg)
		}
	case vault.Silent:
		d.mesh.SecretWaiting(a.Name, "vault "+a.Name+": "+r.SilentWhy(d.cfg.VaultTimeout, spec.VaultGetSubject(d.cfg.Node)), a.At)
		if a.Changed {
			msg := "the vault does not answer: asking again with backoff"
			if pair {
				msg = "the vault does not answer for a consumer's credential: asking again with backoff; the consumer is left out once the vault answers for others of its list (while it answers none, the list waits)"
			}
			d.log.Info().Str("secret", a.Name).Str("reason", r.Reason).Msg(msg)
		}
	case vault.Absent:
		d.mesh.SecretAbsent(a.Name, "vault "+a.Name+": absent", a.At)
		if a.Changed {
			msg := "the vault does not hold a secret yet: waiting"
			if pair {
				msg = "a consumer's credential is not in the vault yet: the consumer is left out"
			}
			d.log.Info().Str("secret", a.Name).Msg(msg)
		}
	default:
		d.mesh.SecretWaiting(a.Name, "vault "+a.Name+": "+r.Reason, a.At)
		if a.Changed {
			msg := "asking the vault went wrong: asking again with backoff"
			if pair {
				msg = "asking the vault for a consumer's credential went wrong: asking again with backoff; the consumer is left out once the vault answers for others of its list (while it answers none, the list waits)"
			}
			d.log.Warn().Str("secret", a.Name).Str("reason", r.Reason).Msg(msg)
		}
	}
}
