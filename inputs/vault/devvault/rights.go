package devvault

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// rights says why node may not have the secret name ("" when it may).
// A non-nil error means the assignments could not be read just now: the
// ask is left unanswered so the client asks again.
//
// Names are split on '/': own/<module>/<name>,
// provision/<provider>/<provision>/<node>/<module>[/<local>] and
// pair/<provider>/<provision>/<node>/<module>[/<local>] exactly, so a part
// holding '/' is refused as out of shape, and so is a part "." or "..".
func rights(ctx context.Context, js jetstream.JetStream, node, name string) (string, error) {
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if p == "" {
			return fmt.Sprintf("vault name %q has an empty part", name), nil
		}
		if p == "." || p == ".." {
			return fmt.Sprintf("vault name %q has a part %q", name, p), nil
		}
	}
	v, err := spec.ParseVaultName(name)
	if err != nil {
		return err.Error(), nil
	}
	switch v.Class {
	case spec.VaultProvision:
		if v.Node != node {
			return fmt.Sprintf("%s is for node %q, asked by node %q", name, v.Node, node), nil
		}
	case spec.VaultPair:
		return assigned(ctx, js, node, v.Provider,
			fmt.Sprintf("node %q does not host provider %q (no assignment %s in %s)",
				node, v.Provider, spec.EncodeKey(node, v.Provider), spec.AssignmentsBucket))
	}
	return assigned(ctx, js, node, v.Module, "")
}

// assigned says why node.module is not an assignment ("" when it is).
func assigned(ctx context.Context, js jetstream.JetStream, node, module, why string) (string, error) {
	key := spec.EncodeKey(node, module)
	if why == "" {
		why = fmt.Sprintf("module %q is not assigned to node %q (no assignment %s in %s)", module, node, key, spec.AssignmentsBucket)
	}
	// The assignments bucket missing is no answer either (SPEC §2.2: a
	// missing bucket is waited for). A client asks only for a module it
	// read from that bucket, so it is missing only for a while: a bus back
	// with its store lost, the bucket deleted and made again. A refusal
	// then failed the module for the client's refusal retry (10 minutes),
	// though the assignments were back seconds later; unanswered, the
	// client waits and asks again with its backoff.
	kv, err := js.KeyValue(ctx, spec.AssignmentsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return "", fmt.Errorf("bucket %s does not exist (yet), so no assignment can be checked", spec.AssignmentsBucket)
	}
	if err != nil {
		return "", fmt.Errorf("opening bucket %s: %w", spec.AssignmentsBucket, err)
	}
	if _, err := kv.Get(ctx, key); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return why, nil
		}
		return "", fmt.Errorf("reading %s %s: %w", spec.AssignmentsBucket, key, err)
	}
	return "", nil
}
