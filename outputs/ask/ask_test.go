package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func TestAnswerGivesAConfigValueOrSaysWhyNot(t *testing.T) {
	lookup := func(_ context.Context, module, key string) ([]byte, bool, bool, error) {
		switch {
		case module == "busy":
			return nil, false, false, errors.New("context deadline exceeded")
		case module == "other":
			return nil, false, false, nodes.ErrNoPlan
		case module == "unlisted":
			return nil, false, false, &AssignmentsUnreadable{Why: "not permitted to read mesh-controller_assignments"}
		case module == "unread":
			return nil, true, false, &Unreadable{Why: "not permitted to read mesh-config_resolved"}
		case module != "web":
			return nil, false, false, nil
		case key == "latin1":
			return []byte("caf\xe9"), true, true, nil
		case key != "model":
			return nil, true, false, nil
		}
		return []byte("opus"), true, true, nil
	}
	for _, c := range []struct{ req, value, err string }{
		{`{"module":"web","kind":"config","key":"model"}`, "opus", ""},
		{`{"module":"web","kind":"secret","key":"api-key"}`, "", "kind secret is not answered here: only config values are (a secret never)"},
		{`{"module":"db","kind":"config","key":"model"}`, "", "module db is not assigned to node ace"},
		{`{"module":"other","kind":"config","key":"model"}`, "", `module other is assigned to node ace without a provisioning plan (its assignment carries no "provisioning"): the provisioner answers nothing for it`},
		{`{"module":"web","kind":"config","key":"other"}`, "", "no config value other is resolved for module web"},
		{`{"module":"web","kind":"config"}`, "", "module and key are required"},
		{`{"module":"busy","kind":"config","key":"k"}`, "", "the client is busy: context deadline exceeded"},
		{`{"module":"unlisted","kind":"config","key":"k"}`, "", "whether module unlisted is assigned to node ace cannot be read yet: not permitted to read mesh-controller_assignments"},
		{`{"module":"unread","kind":"config","key":"k"}`, "", "config value k of module unread cannot be read: not permitted to read mesh-config_resolved"},
		{`{"module":"web","kind":"config","key":"latin1"}`, "", "config value latin1 of module web is not UTF-8 text: a JSON answer cannot carry its bytes as they are"},
		{`not json`, "", "request is not {module, kind, key}: invalid character 'o' in literal null (expecting 'u')"},
		// No kind (left out, empty or JSON null) is said as such, not as
		// "kind  is not answered here" naming nothing.
		{`{"module":"web","key":"model"}`, "", `no kind given: ask {"module", "kind": "config", "key"}; only config values are answered (a secret never)`},
		{`{"module":"web","kind":"","key":"model"}`, "", `no kind given: ask {"module", "kind": "config", "key"}; only config values are answered (a secret never)`},
		{`null`, "", `no kind given: ask {"module", "kind": "config", "key"}; only config values are answered (a secret never)`},
	} {
		r := Answer(context.Background(), "ace", []byte(c.req), lookup)
		got := ""
		if r.Value != nil {
			got = *r.Value
		}
		if got != c.value || r.Error != c.err {
			t.Errorf("%s: value %q error %q, want %q %q", c.req, got, r.Error, c.value, c.err)
		}
	}
}

// A value whose answer is larger than the bus carries is answered with an
// error saying so, not left unanswered (the asker would only time out).
func TestAnAnswerTooLargeForTheBusIsAnErrorNotSilence(t *testing.T) {
	s := bustest.Start(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	big := bytes.Repeat([]byte{1}, int(nc.MaxPayload())/2) // six bytes a byte as JSON (\u0001)
	lookup := func(_ context.Context, module, key string) ([]byte, bool, bool, error) {
		if key == "big" {
			return big, true, true, nil
		}
		return []byte("opus"), true, true, nil
	}
	stop, err := Serve(t.Context(), nc, "ace", lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for key, want := range map[string]string{"big": "over the", "model": ""} {
		m, err := nc.Request(spec.AskSubject("ace"), []byte(`{"module":"web","kind":"config","key":"`+key+`"}`), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: no answer: %v", key, err)
		}
		var r Reply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		if want == "" && (r.Value == nil || *r.Value != "opus") || want != "" && !strings.Contains(r.Error, want) {
			t.Errorf("%s: answered %s", key, m.Data)
		}
	}
}
