package vault

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// WatchChanged calls fn with the vault name of every secret the vault says
// changed on mesh-vault.secret-changed. A payload that does not parse or
// names no secret is ignored. fn runs on the subscription's goroutine.
func WatchChanged(nc *nats.Conn, fn func(secret string)) (*nats.Subscription, error) {
	if nc == nil || fn == nil {
		return nil, errors.New("watching " + spec.VaultChangedSubject + ": no connection or no callback")
	}
	sub, err := nc.Subscribe(spec.VaultChangedSubject, func(m *nats.Msg) {
		var p struct {
			Secret string `json:"secret"`
		}
		if json.Unmarshal(m.Data, &p) != nil || p.Secret == "" {
			return
		}
		fn(p.Secret)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing %s: %w", spec.VaultChangedSubject, err)
	}
	return sub, nil
}
