package nodes

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// putRig is a node whose modules read every kind of bus value: a consumer
// cc (config, placement, a binding judged by its helper's entry, a
// collection) and its provider gitea (its consumers).
func putRig() *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{
		Files:       []FileSpec{{Path: "/etc/cc/a", Template: "a"}},
		Placement:   map[string]map[string]string{"dir": {"state": "/var/lib/cc"}},
		Provisions:  []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
		Items:       []ItemSpec{{Collection: "c1", Template: "i"}},
		Collections: []CollectionSpec{{Name: "c1", Comment: "#"}},
	}))
	m.SetArchive("cc", digestA, map[string][]byte{
		"a": []byte("${config:model} ${dir:state} ${bound:gitea-read:as}\n${collected:c1}"),
		"i": []byte("cc ${config:model}"),
	})
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files:    []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}},
		Provides: []Offer{{Provision: "gitea-read", AnsweredBy: AnsweredByHelper}},
	}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	m.SetSecret(spec.PairSecretName("gitea", "gitea-read", "ace", "cc", ""), []byte("s-cc"), time.Time{})
	m.Put(spec.ConfigBucket, "ace.cc.model", []byte("opus"))
	m.Put("gitea_bound", "ace.cc.gitea-read", []byte(`{"state":"bound","values":{"as":"cc-ace"}}`))
	m.Stabilize()
	return m
}

// putRigKey says whether putRig writes key in bucket.
func putRigKey(bucket, key string) bool {
	switch bucket + " " + key {
	case spec.AssignmentsBucket + " ace.cc", spec.AssignmentsBucket + " ace.gitea",
		spec.ConfigBucket + " ace.cc.model", "gitea_bound ace.cc.gitea-read":
		return true
	}
	_, kind := spec.Lookup(spec.Kind(key))
	return bucket == spec.RegistryBucket && kind
}

// putRigState is what the rig's modules say: each one's state, reason,
// files and items.
func putRigState(m *NodeGraph) string {
	var b strings.Builder
	for _, mod := range []string{"cc", "gitea"} {
		v := m.View(mod)
		if v == nil {
			fmt.Fprintf(&b, "%s not on the node\n", mod)
			continue
		}
		fmt.Fprintf(&b, "%s %v %q\n", mod, v.State, v.Reason)
		for _, f := range v.Files {
			fmt.Fprintf(&b, "  %s %v %q", f.Path, f.State, f.Why)
			if f.Value != nil {
				c, err := f.Value.Bytes()
				fmt.Fprintf(&b, " %q %v", c, err)
			}
			b.WriteByte('\n')
		}
		for _, it := range v.Items {
			fmt.Fprintf(&b, "  item %s %v %q %q\n", it.Collection, it.State, it.Why, it.Text)
		}
	}
	return b.String()
}

var putBuckets = []string{spec.AssignmentsBucket, spec.RegistryBucket, spec.ConfigBucket, "gitea_bound"}

// Any key and value of a bucket the client watches: a key out of its
// bucket's shape is said (naming the key), never taken; the rig's
// modules stabilise; and the same key deleted again leaves them as they
// were.
func FuzzNodeGraphPut(f *testing.F) {
	f.Add(uint8(0), "ace.cc", []byte(`{"provisioning":{"files":[{"path":"/x","template":"a"}]}}`))
	f.Add(uint8(0), "ace.new", []byte(specExample))
	f.Add(uint8(0), "g14.web", []byte(`{"provisioning":{"provisions":[{"provision":"gitea-read","provider":"gitea","credential":"token"}]}}`))
	f.Add(uint8(0), "g14.gitea", []byte(`{"provisioning":{"provides":[{"provision":"gitea-read","have":{"as":"h"}}]}}`))
	f.Add(uint8(0), "ace.cc.x", []byte(`{}`))
	f.Add(uint8(1), "config", []byte(`{"kind":"config","bucket":"elsewhere"}`))
	f.Add(uint8(1), "=41", []byte(`{}`))
	f.Add(uint8(1), "collected", []byte(`not json`))
	f.Add(uint8(2), "ace.cc.model", []byte("${secret:x} \xff"))
	f.Add(uint8(2), "ace.cc.other", []byte(""))
	f.Add(uint8(2), "g14.cc.model", []byte("x"))
	f.Add(uint8(2), "ace.cc", []byte("x"))
	f.Add(uint8(3), "ace.cc.gitea-read", []byte(`{"state":"refused","reason":"no"}`))
	f.Add(uint8(3), "ace.cc.gitea-read.l", []byte(`{"state":"bound","values":{"as":null}}`))
	f.Add(uint8(3), "ace.cc", []byte(`{}`))
	f.Fuzz(func(t *testing.T, which uint8, key string, value []byte) {
		m := putRig()
		before := putRigState(m)
		bucket := putBuckets[int(which)%len(putBuckets)]
		ch := m.Put(bucket, key, value)
		if ch.OutOfShape != nil && key != "" && !strings.Contains(ch.OutOfShape.Error(), strconv.Quote(key)) {
			t.Fatalf("%s %q out of shape: %q does not name the key", bucket, key, ch.OutOfShape)
		}
		if ch.Refused != nil && ch.Refused.Error() == "" {
			t.Fatalf("%s %q refused with an empty error", bucket, key)
		}
		m.Stabilize()
		during := putRigState(m)
		if ch.OutOfShape != nil && during != before {
			t.Fatalf("%s %q out of shape, yet the modules moved:\n%s\nwas\n%s", bucket, key, during, before)
		}
		if putRigKey(bucket, key) {
			return
		}
		m.Delete(bucket, key)
		m.Stabilize()
		if after := putRigState(m); after != before {
			t.Fatalf("%s %q = %q put and deleted left\n%s\nwas\n%s", bucket, key, value, after, before)
		}
	})
}
