package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Buckets lists the provisioner's own buckets (SPEC §2.2) in the order
// EnsureBuckets creates them. The server creates them; the client only
// waits for them.
var Buckets = []string{spec.RegistryBucket, spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket}

// EnsureBuckets creates each of the provisioner's buckets that does not
// exist yet, with History 1 and the given replicas (at least 1), refusing
// rollups (refuseRollups, also for one it made before). A bucket made by
// hand is left exactly as it is, whatever its configuration.
func EnsureBuckets(ctx context.Context, js jetstream.JetStream, replicas int) error {
	_, err := ensureBuckets(ctx, js, replicas)
	return err
}

// ensureBuckets is EnsureBuckets saying which buckets it created.
func ensureBuckets(ctx context.Context, js jetstream.JetStream, replicas int) (created []string, err error) {
	if replicas < 1 {
		replicas = 1
	}
	for _, name := range Buckets {
		_, err := js.KeyValue(ctx, name)
		if err == nil {
			if err := refuseRollups(ctx, js, name); err != nil {
				return created, err
			}
			continue
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return created, fmt.Errorf("looking for bucket %s: %w", name, err)
		}
		_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      name,
			Description: "mesh-provisioner: " + description(name),
			History:     1,
			Replicas:    replicas,
		})
		if err != nil {
			if errors.Is(err, jetstream.ErrBucketExists) {
				// Made meanwhile by another server: leave it be.
				continue
			}
			return created, fmt.Errorf("creating bucket %s: %w", name, err)
		}
		created = append(created, name)
		if err := refuseRollups(ctx, js, name); err != nil {
			return created, err
		}
	}
	return created, nil
}

// refuseRollups sets a bucket this server made (its description says so)
// to refuse "Nats-Rollup" writes. A client may write only keys under its
// own node, but one write of its own key carrying "Nats-Rollup: all"
// removed every key of the bucket, every other node's (a permission cannot
// refuse a header). No one of the mesh purges these buckets by rollup:
// deletes are markers, and old markers are purged by the API (markers.go).
// A bucket made by hand is left as it is, as EnsureBuckets says.
func refuseRollups(ctx context.Context, js jetstream.JetStream, name string) error {
	st, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		return fmt.Errorf("looking at bucket %s: %w", name, err)
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowRollup || cfg.Description != "mesh-provisioner: "+description(name) {
		return nil
	}
	cfg.AllowRollup = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bucket %s: refusing rollups: %w", name, err)
	}
	return nil
}

// warnFewerReplicas says, at the start, each provisioner bucket that has
// fewer replicas than --replicas asks: one made earlier (by a server
// without the flag, or by hand) is left as it is, and an operator who
// asked for 3 on a three-server cluster would otherwise believe the
// buckets outlive a server that they do not.
func warnFewerReplicas(ctx context.Context, js jetstream.JetStream, replicas int, log zerolog.Logger) {
	for _, name := range Buckets {
		st, err := js.Stream(ctx, "KV_"+name)
		if err != nil {
			continue // made just now or gone meanwhile: nothing to say
		}
		if have := max(st.CachedInfo().Config.Replicas, 1); have < replicas {
			log.Warn().Str("bucket", name).Int("replicas", have).Int("asked", replicas).
				Msg("provisioner bucket has fewer replicas than --replicas asks: left as it is (raise it with: nats stream edit KV_" + name + " --replicas " + strconv.Itoa(replicas) + ")")
		}
	}
}

func description(bucket string) string {
	switch bucket {
	case spec.RegistryBucket:
		return "which domain answers which kind (key = kind)"
	case spec.NeedsBucket:
		return "each client's needs (key = node.module.kind.name)"
	case spec.AppliedBucket:
		return "each module's last report (key = node.module)"
	case spec.CollectBucket:
		return "collection items (key = node.collection.contributor)"
	}
	return bucket
}
