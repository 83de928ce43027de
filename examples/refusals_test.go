package examples

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// refusal is one call a user must not be able to make, and the violation
// the server must name for it (subject exact, or prefix…suffix when a
// consumer's random name sits in the middle).
type refusal struct {
	name           string
	as             string
	do             func(ctx context.Context, u *user) error
	async          bool // the client library reports no error of its own (publish, subscribe)
	verb           string
	subject        string
	prefix, suffix string
}

func kvGet(bucket, key string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		kv, err := u.js.KeyValue(ctx, bucket)
		if err != nil {
			return err
		}
		_, err = kv.Get(ctx, key)
		return err
	}
}

func kvPut(bucket, key string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		kv, err := u.js.KeyValue(ctx, bucket)
		if err != nil {
			return err
		}
		_, err = kv.PutString(ctx, key, `{"state":"met"}`)
		return err
	}
}

func kvWatch(bucket, filter string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		kv, err := u.js.KeyValue(ctx, bucket)
		if err != nil {
			return err
		}
		w, err := kv.Watch(ctx, filter)
		if err != nil {
			return err
		}
		defer func() { _ = w.Stop() }()
		select {
		case <-w.Updates(): // a value or the end of none: the watch works
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func request(subject string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		_, err := u.nc.RequestWithContext(ctx, subject, []byte(`{}`))
		return err
	}
}

func publish(subject string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		if err := u.nc.Publish(subject, []byte(`{}`)); err != nil {
			return err
		}
		return u.nc.FlushWithContext(ctx)
	}
}

func purge(stream string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		st, err := u.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		return st.Purge(ctx)
	}
}

func subscribe(subject string) func(ctx context.Context, u *user) error {
	return func(ctx context.Context, u *user) error {
		if _, err := u.nc.SubscribeSync(subject); err != nil {
			return err
		}
		return u.nc.FlushWithContext(ctx)
	}
}

// TestClientRefusals: with the rights of nodes/spec (config and JWT
// users), the client user of one node reaches nothing of another node,
// and only a node's tool runner asks it.
func TestClientRefusals(t *testing.T) { forEachBus(t, testClientRefusals) }

func testClientRefusals(t *testing.T, mode string) {
	b := loadBus(t, mode)
	const cfgDirect = "$JS.API.DIRECT.GET.KV_mesh-config_resolved"
	var checks []refusal
	for _, bucket := range ownBuckets {
		checks = append(checks, refusal{
			name: "ace writes g14's key of " + bucket, as: "provisioner-ace",
			do:   kvPut(bucket, "g14.claude-code.x"),
			verb: "Publish", subject: "$KV." + bucket + ".g14.claude-code.x",
		})
	}
	checks = append(checks,
		refusal{
			name: "ace reads g14's need", as: "provisioner-ace",
			do:   kvGet(needsBucket, "g14.claude-code.config.model"),
			verb: "Publish", subject: "$JS.API.DIRECT.GET.KV_mesh-provisioner_needs.$KV.mesh-provisioner_needs.g14.claude-code.config.model",
		},
		refusal{
			name: "ace reads g14's config value", as: "provisioner-ace",
			do:   kvGet(configBucket, "g14.claude-code.model"),
			verb: "Publish", subject: cfgDirect + ".$KV.mesh-config_resolved.g14.claude-code.model",
		},
		refusal{
			name: "ace watches g14's config", as: "provisioner-ace",
			do:   kvWatch(configBucket, "g14.>"),
			verb: "Publish", prefix: "$JS.API.CONSUMER.CREATE.KV_mesh-config_resolved.", suffix: ".$KV.mesh-config_resolved.g14.>",
		},
		refusal{
			name: "ace watches the whole config bucket", as: "provisioner-ace",
			do:   kvWatch(configBucket, ">"),
			verb: "Publish", prefix: "$JS.API.CONSUMER.CREATE.KV_mesh-config_resolved.", suffix: ".$KV.mesh-config_resolved.>",
		},
		refusal{
			name: "ace reads a config value by sequence", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				kv, err := u.js.KeyValue(ctx, configBucket)
				if err != nil {
					return err
				}
				_, err = kv.GetRevision(ctx, "g14.claude-code.model", 1)
				return err
			},
			verb: "Publish", subject: cfgDirect,
		},
		refusal{
			name: "g14 reads ace's config value", as: "provisioner-g14",
			do:   kvGet(configBucket, "ace.claude-code.model"),
			verb: "Publish", subject: cfgDirect + ".$KV.mesh-config_resolved.ace.claude-code.model",
		},
		refusal{
			name: "ace reads g14's binding", as: "provisioner-ace",
			do:   kvGet(giteaBound, "g14.claude-code.gitea-read"),
			verb: "Publish", subject: "$JS.API.DIRECT.GET.KV_gitea_bound.$KV.gitea_bound.g14.claude-code.gitea-read",
		},
		refusal{
			name: "ace asks the vault as g14", as: "provisioner-ace",
			do:   request("mesh-vault.get.provisioner.g14"),
			verb: "Publish", subject: "mesh-vault.get.provisioner.g14",
		},
		refusal{
			name: "ace asks its own client", as: "provisioner-ace",
			do:   request("prov.ask.ace"),
			verb: "Publish", subject: "prov.ask.ace",
		},
		refusal{
			name: "ace publishes g14's report", as: "provisioner-ace",
			do: publish("prov.applied.g14.claude-code"), async: true,
			verb: "Publish", subject: "prov.applied.g14.claude-code",
		},
		refusal{
			name: "ace listens to g14's asks", as: "provisioner-ace",
			do: subscribe("prov.ask.g14"), async: true,
			verb: "Subscription", subject: "prov.ask.g14",
		},
		refusal{
			name: "ace listens on g14's inbox", as: "provisioner-ace",
			do: subscribe("_INBOX.provisioner.g14.>"), async: true,
			verb: "Subscription", subject: "_INBOX.provisioner.g14.>",
		},
		refusal{
			name: "ace deletes a bucket", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				return u.js.DeleteKeyValue(ctx, needsBucket)
			},
			verb: "Publish", subject: "$JS.API.STREAM.DELETE.KV_mesh-provisioner_needs",
		},
		refusal{
			name: "ace writes a templates archive", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				obs, err := u.js.ObjectStore(ctx, artifacts)
				if err != nil {
					return err
				}
				_, err = obs.PutBytes(ctx, "evil.tar.gz", []byte("x"))
				return err
			},
			verb: "Publish", prefix: "$O.mesh-artifacts.",
		},
		refusal{
			// SPEC §2.3 r2: the client asks nothing of the server.
			name: "ace asks the server's verb", as: "provisioner-ace",
			do:   request("mesh-provisioner.provisioning"),
			verb: "Publish", subject: "mesh-provisioner.provisioning",
		},
		refusal{
			name: "the provider gitea writes a need", as: "gitea",
			do:   kvPut(needsBucket, "ace.claude-code.config.model"),
			verb: "Publish", subject: "$KV.mesh-provisioner_needs.ace.claude-code.config.model",
		},
		refusal{
			name: "g14's tool runner asks ace", as: "toolrunner-g14",
			do:   request("prov.ask.ace"),
			verb: "Publish", subject: "prov.ask.ace",
		},
		refusal{
			name: "ace's tool runner publishes a report", as: "toolrunner-ace",
			do: publish("prov.applied.ace.claude-code"), async: true,
			verb: "Publish", subject: "prov.applied.ace.claude-code",
		},
		refusal{
			name: "g14's tool runner listens to ace's changes", as: "toolrunner-g14",
			do: subscribe("prov.changed.ace.>"), async: true,
			verb: "Subscription", subject: "prov.changed.ace.>",
		},
		refusal{
			name: "ace purges a bucket", as: "provisioner-ace",
			do:   purge("KV_" + needsBucket),
			verb: "Publish", subject: "$JS.API.STREAM.PURGE.KV_mesh-provisioner_needs",
		},
		refusal{
			name: "ace makes a bucket", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				_, err := u.nc.RequestWithContext(ctx, "$JS.API.STREAM.CREATE.KV_ace-own",
					[]byte(`{"name":"KV_ace-own","subjects":["$KV.ace-own.>"],"allow_rollup_hdrs":true}`))
				return err
			},
			verb: "Publish", subject: "$JS.API.STREAM.CREATE.KV_ace-own",
		},
		refusal{
			name: "ace changes a bucket's stream", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				_, err := u.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "KV_" + needsBucket,
					Subjects: []string{"$KV." + needsBucket + ".>"}, AllowRollup: true})
				return err
			},
			verb: "Publish", subject: "$JS.API.STREAM.UPDATE.KV_mesh-provisioner_needs",
		},
		refusal{
			// By the old API alone: CONSUMER.CREATE.<stream>.<name> makes
			// one when the body names durable_name, which no permission
			// reads (README, known limits).
			name: "ace makes a durable consumer", as: "provisioner-ace",
			do: func(ctx context.Context, u *user) error {
				_, err := u.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.DURABLE.CREATE.KV_mesh-controller_assignments.keep",
					[]byte(`{"stream_name":"KV_mesh-controller_assignments","config":{"durable_name":"keep","ack_policy":"explicit"}}`))
				return err
			},
			verb: "Publish", subject: "$JS.API.CONSUMER.DURABLE.CREATE.KV_mesh-controller_assignments.keep",
		},
		refusal{
			name: "ace watches g14's reports", as: "provisioner-ace",
			do:   kvWatch(appliedBucket, "g14.>"),
			verb: "Publish", prefix: "$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_applied.", suffix: ".$KV.mesh-provisioner_applied.g14.>",
		},
		refusal{
			name: "ace reads g14's item", as: "provisioner-ace",
			do:   kvGet(collectBucket, "g14.shell=3Azsh=3Anormal.claude-code"),
			verb: "Publish", subject: "$JS.API.DIRECT.GET.KV_mesh-provisioner_collect.$KV.mesh-provisioner_collect.g14.shell=3Azsh=3Anormal.claude-code",
		},
		refusal{
			name: "ace writes its own config value", as: "provisioner-ace",
			do:   kvPut(configBucket, "ace.claude-code.model"),
			verb: "Publish", subject: "$KV.mesh-config_resolved.ace.claude-code.model",
		},
		refusal{
			name: "ace writes its own binding", as: "provisioner-ace",
			do:   kvPut(giteaBound, "ace.claude-code.gitea-read"),
			verb: "Publish", subject: "$KV.gitea_bound.ace.claude-code.gitea-read",
		},
		refusal{
			name: "ace writes an assignment", as: "provisioner-ace",
			do:   kvPut(assignmentsBucket, "ace.evil"),
			verb: "Publish", subject: "$KV.mesh-controller_assignments.ace.evil",
		},
		refusal{
			name: "ace writes the registry", as: "provisioner-ace",
			do:   kvPut(registryBucket, "secret"),
			verb: "Publish", subject: "$KV.mesh-provisioner_registry.secret",
		},
		refusal{
			name: "ace publishes g14's change", as: "provisioner-ace",
			do: publish("prov.changed.g14.claude-code"), async: true,
			verb: "Publish", subject: "prov.changed.g14.claude-code",
		},
		refusal{
			name: "ace announces a rotation", as: "provisioner-ace",
			do: publish("mesh-vault.secret-changed"), async: true,
			verb: "Publish", subject: "mesh-vault.secret-changed",
		},
		refusal{
			name: "ace listens to every node's vault requests", as: "provisioner-ace",
			do: subscribe("mesh-vault.get.>"), async: true,
			verb: "Subscription", subject: "mesh-vault.get.>",
		},
		refusal{
			name: "ace listens to g14's reports", as: "provisioner-ace",
			do: subscribe("prov.applied.g14.>"), async: true,
			verb: "Subscription", subject: "prov.applied.g14.>",
		},
		refusal{
			name: "ace listens on every inbox", as: "provisioner-ace",
			do: subscribe("_INBOX.>"), async: true,
			verb: "Subscription", subject: "_INBOX.>",
		},
		refusal{
			name: "ace listens on its tool runner's inbox", as: "provisioner-ace",
			do: subscribe("_INBOX.toolrunner.ace.>"), async: true,
			verb: "Subscription", subject: "_INBOX.toolrunner.ace.>",
		},
		refusal{
			name: "ace listens on the vault's inbox", as: "provisioner-ace",
			do: subscribe("_INBOX.mesh-vault.>"), async: true,
			verb: "Subscription", subject: "_INBOX.mesh-vault.>",
		},
		refusal{
			name: "the provider gitea deletes a need", as: "gitea",
			do: func(ctx context.Context, u *user) error {
				kv, err := u.js.KeyValue(ctx, needsBucket)
				if err != nil {
					return err
				}
				return kv.Delete(ctx, "g14.claude-code.config.model")
			},
			verb: "Publish", subject: "$KV.mesh-provisioner_needs.g14.claude-code.config.model",
		},
		refusal{
			name: "the provider gitea purges the needs", as: "gitea",
			do:   purge("KV_" + needsBucket),
			verb: "Publish", subject: "$JS.API.STREAM.PURGE.KV_mesh-provisioner_needs",
		},
		refusal{
			name: "the provider gitea writes g14's report", as: "gitea",
			do:   request("$KV.mesh-provisioner_applied.g14.claude-code"), // a JetStream publish
			verb: "Publish", subject: "$KV.mesh-provisioner_applied.g14.claude-code",
		},
		refusal{
			// A stream's subjects are in the request's body, where no
			// permission looks: one who may change its bucket's stream
			// may make it keep _INBOX.toolrunner.> (every node's config
			// values as prov.ask answers them) or republish anywhere.
			name: "the provider gitea changes its bucket's stream", as: "gitea",
			do: func(ctx context.Context, u *user) error {
				_, err := u.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "KV_" + giteaBound,
					Subjects: []string{"$KV." + giteaBound + ".>", "_INBOX.toolrunner.>"}, AllowRollup: true})
				return err
			},
			verb: "Publish", subject: "$JS.API.STREAM.UPDATE.KV_gitea_bound",
		},
		refusal{
			name: "the provider gitea remakes its bucket", as: "gitea",
			do: func(ctx context.Context, u *user) error {
				if err := u.js.DeleteStream(ctx, "KV_"+giteaBound); err != nil {
					return err
				}
				_, err := u.nc.RequestWithContext(ctx, "$JS.API.STREAM.CREATE.KV_gitea_bound",
					[]byte(`{"name":"KV_gitea_bound","subjects":["$KV.gitea_bound.>","_INBOX.>"]}`))
				return err
			},
			verb: "Publish", subject: "$JS.API.STREAM.DELETE.KV_gitea_bound",
		},
		refusal{
			name: "ace's tool runner asks the vault", as: "toolrunner-ace",
			do:   request("mesh-vault.get.provisioner.ace"),
			verb: "Publish", subject: "mesh-vault.get.provisioner.ace",
		},
	)

	// Every refused call ends only at its timeout: make them all at once.
	users := make([]*user, len(checks))
	errs := make([]error, len(checks))
	for i, c := range checks {
		users[i] = connect(t, b.s, c.as)
	}
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), failWait)
			defer cancel()
			errs[i] = c.do(ctx, users[i])
		})
	}
	wg.Wait()

	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			u := users[i]
			if !c.async && errs[i] == nil {
				t.Errorf("%s: the call succeeded", c.as)
			}
			if c.subject != "" {
				u.refused(t, c.verb, c.subject)
			} else {
				u.refusedLike(t, c.verb, c.prefix, c.suffix)
			}
		})
	}
}
