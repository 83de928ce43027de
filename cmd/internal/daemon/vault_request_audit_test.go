package daemon

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// Every vault request is SPEC §4.2's JSON exactly: secret, node, module,
// public_key, and credential on a provisions entry's request alone; the
// vault names carry the local when it is not empty; the module is the
// secret's owner, the provisions entry's module, the provider for a
// consumer's credential; the subject names the node.
func TestEveryVaultRequestIsTheSpecsJSON(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/app.conf", Template: "conf"}},
		Secrets: []nodes.SecretSpec{{Name: "api-key"}},
		Provisions: []nodes.ProvisionSpec{
			{Name: "t1", Provision: "gitea-read", Provider: "gitea", Credential: "token"},
			{Name: "t2", Provision: "gitea-read", Provider: "gitea", Credential: "ssh-key", Local: "second"}},
	}, map[string]string{"conf": "${secret:api-key} ${secret:t1} ${secret:t2}\n"})
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan("", "x"), nil)

	var mu sync.Mutex
	got := map[string]map[string]any{} // vault name → its request
	subjects := map[string]string{}
	sub, err := m.nc.Subscribe("mesh-vault.get.>", func(msg *nats.Msg) {
		var r map[string]any
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Errorf("a vault request is not JSON: %v", err)
			return
		}
		name, _ := r["secret"].(string)
		mu.Lock()
		got[name], subjects[name] = r, msg.Subject
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	t.Cleanup(func() { sub.Unsubscribe() })
	m.client("ace")

	want := map[string]map[string]any{
		"own/app/api-key":                           {"module": "app"},
		"provision/gitea/gitea-read/ace/app":        {"module": "app", "credential": "token"},
		"provision/gitea/gitea-read/ace/app/second": {"module": "app", "credential": "ssh-key"},
		"pair/gitea/gitea-read/ace/app":             {"module": "gitea"}, // app is a consumer of gitea too
		"pair/gitea/gitea-read/ace/app/second":      {"module": "gitea"},
		"pair/gitea/gitea-read/g14/cc":              {"module": "gitea"},
		"pair/gitea/gitea-read/g14/cc/x":            {"module": "gitea"},
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, slices.Sorted(maps.Keys(want))) {
			return fmt.Errorf("asked %v", names)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for name, w := range want {
		r := got[name]
		keys := []string{"module", "node", "public_key", "secret"}
		if _, ok := w["credential"]; ok {
			keys = append(keys, "credential")
		}
		if k := slices.Sorted(maps.Keys(r)); !slices.Equal(k, slices.Sorted(slices.Values(keys))) {
			t.Errorf("%s: request fields %v, want %v", name, k, slices.Sorted(slices.Values(keys)))
		}
		if r["node"] != "ace" || r["module"] != w["module"] || (w["credential"] != nil && r["credential"] != w["credential"]) {
			t.Errorf("%s: request %v, want node ace and %v", name, r, w)
		}
		if pk, _ := r["public_key"].(string); len(pk) != 44 {
			t.Errorf("%s: public_key %q is not the base64 of 32 bytes", name, pk)
		}
		if subjects[name] != "mesh-vault.get.provisioner.ace" {
			t.Errorf("%s: asked on %s", name, subjects[name])
		}
	}
}
