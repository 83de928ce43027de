package devvault

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
)

// AssignmentsBucket is where the vault looks for who runs what.
const AssignmentsBucket = "mesh-controller_assignments"

// askingNode reads the node from mesh-vault.get.provisioner.<node>.
func askingNode(subject string) (string, error) {
	tok, ok := strings.CutPrefix(subject, subjectGetPrefix)
	if !ok || tok == "" || strings.Contains(tok, ".") {
		return "", fmt.Errorf("subject %s is not %s<node>", subject, subjectGetPrefix)
	}
	node, err := nodes.DecodeToken(tok)
	if err != nil {
		return "", fmt.Errorf("subject %s: node token out of shape: %w", subject, err)
	}
	return node, nil
}

// rights says why node may not have the secret name ("" when it may).
// A non-nil error means the assignments could not be read just now: the
// ask is left unanswered so the client asks again.
//
// Names are split on '/': own/<module>/<name> (the name may hold '/'),
// provision/<provider>/<provision>/<node>/<module> and
// pair/<provider>/<provision>/<node>/<module>[/<local>] exactly, so a node,
// module, provider or provision name holding '/' is refused as out of shape.
func rights(ctx context.Context, js jetstream.JetStream, node, name string) (string, error) {
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if p == "" {
			return fmt.Sprintf("vault name %q has an empty part", name), nil
		}
	}
	switch parts[0] {
	case "own":
		if len(parts) < 3 {
			return fmt.Sprintf("vault name %q is not own/<module>/<name>", name), nil
		}
		return assigned(ctx, js, node, parts[1], "")
	case "provision":
		if len(parts) != 5 {
			return fmt.Sprintf("vault name %q is not provision/<provider>/<provision>/<node>/<module>", name), nil
		}
		if parts[3] != node {
			return fmt.Sprintf("%s is for node %q, asked by node %q", name, parts[3], node), nil
		}
		return assigned(ctx, js, node, parts[4], "")
	case "pair":
		if len(parts) != 5 && len(parts) != 6 {
			return fmt.Sprintf("vault name %q is not pair/<provider>/<provision>/<node>/<module>[/<local>]", name), nil
		}
		return assigned(ctx, js, node, parts[1],
			fmt.Sprintf("node %q does not host provider %q (no assignment %s in %s)",
				node, parts[1], nodes.EncodeKey(node, parts[1]), AssignmentsBucket))
	}
	return fmt.Sprintf("vault name %q is not own/, provision/ or pair/", name), nil
}

// assigned says why node.module is not an assignment ("" when it is).
func assigned(ctx context.Context, js jetstream.JetStream, node, module, why string) (string, error) {
	key := nodes.EncodeKey(node, module)
	if why == "" {
		why = fmt.Sprintf("module %q is not assigned to node %q (no assignment %s in %s)", module, node, key, AssignmentsBucket)
	}
	kv, err := js.KeyValue(ctx, AssignmentsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Sprintf("bucket %s does not exist, so no assignment can be checked", AssignmentsBucket), nil
	}
	if err != nil {
		return "", fmt.Errorf("opening bucket %s: %w", AssignmentsBucket, err)
	}
	if _, err := kv.Get(ctx, key); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return why, nil
		}
		return "", fmt.Errorf("reading %s %s: %w", AssignmentsBucket, key, err)
	}
	return "", nil
}
