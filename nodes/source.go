package nodes

import (
	"strings"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Source says where a node's value is read from: in words for people, and
// by name (bucket and key, vault name, collection) for machines. The
// control socket's explanation is made of it; it never holds a value.
type Source struct {
	Where       string // in words: "mesh-config_resolved ace.web.model"
	Placeholder string // need
	Bucket      string
	Key         string
	Vault       string // a vault name
	Collection  string
	Contributor string // item: the module contributing it
}

// Source says where the node keyed k, whose Origin is o (nil for none), is
// read from.
func (o *Origin) Source(k graph.Key) Source {
	if o == nil {
		o = &Origin{}
	}
	name := k.Name
	switch k.Kind {
	case KindNeed:
		return Source{Where: o.Placeholder, Placeholder: o.Placeholder}
	case KindConfig, KindBound, KindPlan:
		return Source{Where: o.Bucket + " " + o.Key, Bucket: o.Bucket, Key: o.Key}
	case KindRegistry:
		return Source{Where: spec.RegistryBucket + " " + name, Bucket: spec.RegistryBucket, Key: name}
	case KindPlacement:
		field := name
		if i := strings.Index(name, "/"); i >= 0 {
			field = name[i+1:]
		}
		return Source{Where: o.Bucket + " " + o.Key + " placement." + field, Bucket: o.Bucket, Key: o.Key}
	case KindArchive:
		return Source{Where: "templates archive " + o.Key, Key: o.Key}
	case KindVault:
		return Source{Where: "vault " + name, Vault: name}
	case KindOffers:
		where := o.Bucket + " " + o.Key
		if o.Key == "" {
			where = o.Bucket
		}
		return Source{Where: where + " (the offers of " + name + ")", Bucket: o.Bucket, Key: o.Key}
	case KindOffer:
		provider, x, _ := strings.Cut(name, "/")
		where := provider + "'s offer " + x
		if o.Key != "" {
			where += " (" + o.Bucket + " " + o.Key + ")"
		}
		return Source{Where: where + ": " + o.Rule, Bucket: o.Bucket, Key: o.Key}
	case KindBindings:
		return Source{Where: spec.AssignmentsBucket + " (the consumers bound to " + name + ")", Bucket: spec.AssignmentsBucket}
	case KindCollection:
		return Source{Where: "collection " + name, Collection: name, Bucket: spec.CollectBucket}
	case KindItem:
		return Source{Where: "item " + o.Collection + " of contributor " + o.Module, Collection: o.Collection, Contributor: o.Module}
	case KindConsumers:
		return Source{Where: "consumers of " + name}
	case KindFile:
		return Source{Where: "file " + o.Path + " of " + o.Module}
	case KindModule:
		return Source{Where: "module " + name}
	}
	return Source{Where: k.String()}
}

// SecretName is the name of the secret a secret file holds ("" for any
// other node): the placeholder ${secret:NAME} its Origin names.
func (o *Origin) SecretName() string {
	if o == nil || !strings.HasPrefix(o.Placeholder, "${secret:") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(o.Placeholder, "${secret:"), "}")
}
