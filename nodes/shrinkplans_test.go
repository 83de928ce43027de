package nodes

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The assignments watch keeps of each value of its first snapshot what
// ShrinkOthersPlans leaves (bus.Watch.Shrink). A client that read the
// values so cut sees what one that read them whole sees: the same change
// said of each key, the same consumers listed in the provider's file, the
// same plans kept for a restart; and another node's ordinary plan is cut
// to a fraction.
func TestShrinkOthersPlansReadsAsTheWholeValue(t *testing.T) {
	pad := `"files":[` + strings.Repeat(`{"path":"/etc/cc/conf.toml","template":"t","owner":"cc","mode":"0640","on_change":{"action":"restart","unit":"cc.service"}},`, 12) +
		`{"path":"/etc/cc/last","template":"t"}],"placement":{"dir":{"a0":"` + strings.Repeat("x", 300) + `"}}`
	bind := `{"provision":"gitea-read","provider":"gitea","credential":"token","path":"/etc/cc/t","mode":"0600","on_change":{"action":"restart"}}`
	values := map[string]string{
		// Ordinary plans: a consumer, a provider, one binding elsewhere.
		"n-1.cc": `{"node":"n-1","module":"cc","provisioning":{` + pad + `,"provisions":[` + bind + `]}}`,
		"n-2.cc": `{"node":"n-2","module":"cc","provisioning":{"provisions":[` + bind + `,{"provision":"gitea-read","provider":"gitea","local":"second"}],` + pad + `,"provides":["api",{"provision":"adm","answered_by":"helper"}]}}`,
		"n-3.cc": `{"provisioning":{` + pad + `,"provisions":[{"provision":"push","provider":"metrics"}]}}`,
		// A name given twice: encoding/json merges the lists' entries.
		"n-4.cc": `{"provisioning":{"provisions":[{"provision":"gitea-read","provider":"gitea","local":"merged"}],` + pad + `,"provisions":[{"provision":"gitea-read","provider":"gitea"}]}}`,
		"n-5.cc": `{"provisioning":{"provisions":[` + bind + `]},"Provisioning":{` + pad + `,"provides":[{"provision":"p2","answered-by":"helper"}]}}`,
		// An offer with an empty have, which an offer does not write.
		"n-6.cc": `{"provisioning":{` + pad + `,"provides":[{"provision":"p","have":{}}],"provisions":[` + bind + `]}}`,
		"n-7.cc": `{"provisioning":{` + pad + `,"provides":[{"provision":"p","have":{"url":"u","gone":null,"port":5432}}],"provisions":[` + bind + `]}}`,
		// Refused, not a plan, not parsed: said of the whole value.
		"n-8.cc":  `{"provisioning":{` + pad + `,"provisions":[{"provision":"a/b","provider":"gitea"}]}}`,
		"n-9.cc":  `{"other":{` + pad + `}}`,
		"n-10.cc": `{"provisioning":{` + pad + `,"provisions":[` + bind + `]}`,
		"n-11.cc": `{"provisioning":{` + pad + `,"provisions":[{"provision":"gitea-read","provider":"gitea","mode":5}]}}`,
		"n-12.cc": `{"provisioning":{` + pad + `,"provides":[5],"provisions":[` + bind + `]}}`,
		"n-13.cc": `{"provisioning":{"provisions":[` + bind + `]},` + pad + `,"provisioning":null}`,
		"n-14.cc": `[` + bind + `]`,
		"n-15.cc": `{"provisioning":{` + pad + `,"provisions":null,"provides":[]}}`,
		// This node's plan, and a key out of shape: as they are.
		"ace.cc":    `{"provisioning":{` + pad + `,"provisions":[` + bind + `]}}`,
		"n-16.cc.x": `{"provisioning":{` + pad + `,"provisions":[` + bind + `]}}`,
	}
	shrink := ShrinkOthersPlans("ace")
	whole, cut := NewNodeGraph("ace"), NewNodeGraph("ace")
	for _, m := range []*NodeGraph{whole, cut} {
		registryAll(m)
		m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
			Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
		m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		v := []byte(values[key])
		short := shrink(key, v)
		switch key {
		case "n-1.cc", "n-2.cc", "n-3.cc", "n-4.cc", "n-5.cc", "n-7.cc", "n-15.cc":
			if len(short)*4 > len(v) {
				t.Errorf("%s: cut to %d bytes of %d, want a quarter at most: %s", key, len(short), len(v), short)
			}
		case "ace.cc", "n-6.cc", "n-8.cc", "n-9.cc", "n-10.cc", "n-11.cc", "n-12.cc", "n-13.cc", "n-14.cc", "n-16.cc.x":
			if string(short) != values[key] {
				t.Errorf("%s: cut to %s, want it as it is", key, short)
			}
		}
		a, b := whole.Put(spec.AssignmentsBucket, key, v), cut.Put(spec.AssignmentsBucket, key, short)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: whole says %v, cut says %v", key, a, b)
		}
	}
	for _, m := range []*NodeGraph{whole, cut} {
		for _, n := range []string{"n-1", "n-2", "n-4", "n-5"} {
			m.SetSecret(spec.PairSecretName("gitea", "gitea-read", n, "cc", ""), []byte("s-"+n), time.Time{})
		}
		m.SetSecret(spec.PairSecretName("gitea", "gitea-read", "n-2", "cc", "second"), []byte("s-second"), time.Time{})
		m.SetSecret(spec.PairSecretName("gitea", "gitea-read", "n-4", "cc", "merged"), []byte("s-merged"), time.Time{})
		m.Stabilize()
		// The list's first value waits for every consumer's answer (n-6's,
		// n-7's and ace's never come here): let it go as the retry tick
		// does after FirstConsumersWait.
		m.ReleaseDue(time.Now().Add(FirstConsumersWait + time.Minute))
		m.Stabilize()
	}
	got, want := file(cut, "gitea", "/etc/gitea/consumers.json"), file(whole, "gitea", "/etc/gitea/consumers.json")
	if got.Value == nil || want.Value == nil || string(got.Value.mustBytes()) != string(want.Value.mustBytes()) {
		t.Fatalf("consumers file read cut:\n%v\nwant, as read whole:\n%v", got.Value, want.Value)
	}
	if !strings.Contains(string(want.Value.mustBytes()), "s-merged") {
		t.Errorf("the consumers file lacks n-4's merged entry: %s", want.Value.mustBytes())
	}
	kw, _ := whole.KeptPlans()
	kc, _ := cut.KeptPlans()
	if !reflect.DeepEqual(kw, kc) {
		t.Errorf("kept plans read cut %v, want %v", kc, kw)
	}
	if !reflect.DeepEqual(whole.offerKeys, cut.offerKeys) {
		t.Errorf("offers read cut %v, want %v", cut.offerKeys, whole.offerKeys)
	}
}

// ShrinkOthersPlans writes a plan's provisions entries and reads them back
// without looking: that holds while a ProvisionSpec is text (strings, and
// structs of strings) with no JSON methods of its own, each field written
// whole but for an empty text (omitempty), which reads back as the same.
// A field of another kind (a map, a list, a number) must have the cut look
// again.
func TestShrinkOthersPlansProvisionSpecIsText(t *testing.T) {
	var text func(ty reflect.Type, path string)
	text = func(ty reflect.Type, path string) {
		for _, i := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler]()} {
			if ty.Implements(i) || reflect.PointerTo(ty).Implements(i) {
				t.Errorf("%s (%s) has JSON methods of its own: ShrinkOthersPlans must read its entries back", path, ty)
			}
		}
		for i := range ty.NumField() {
			f := ty.Field(i)
			switch f.Type.Kind() {
			case reflect.String:
			case reflect.Struct:
				if strings.Contains(f.Tag.Get("json"), "omitempty") {
					t.Errorf("%s.%s: a struct written only when not empty", path, f.Name)
				}
				text(f.Type, path+"."+f.Name)
			default:
				t.Errorf("%s.%s is a %s, not text: ShrinkOthersPlans must read its entries back", path, f.Name, f.Type)
			}
		}
	}
	text(reflect.TypeFor[ProvisionSpec](), "ProvisionSpec")
}
