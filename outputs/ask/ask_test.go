package ask

import (
	"context"
	"errors"
	"testing"
)

func TestAnswerGivesAConfigValueOrSaysWhyNot(t *testing.T) {
	lookup := func(_ context.Context, module, key string) ([]byte, bool, bool, error) {
		switch {
		case module == "busy":
			return nil, false, false, errors.New("context deadline exceeded")
		case module != "web":
			return nil, false, false, nil
		case key != "model":
			return nil, true, false, nil
		}
		return []byte("opus"), true, true, nil
	}
	for _, c := range []struct{ req, value, err string }{
		{`{"module":"web","kind":"config","key":"model"}`, "opus", ""},
		{`{"module":"web","kind":"secret","key":"api-key"}`, "", "kind secret is not answered here: only config values are (a secret never)"},
		{`{"module":"db","kind":"config","key":"model"}`, "", "module db is not assigned to node ace"},
		{`{"module":"web","kind":"config","key":"other"}`, "", "no config value other is resolved for module web"},
		{`{"module":"web","kind":"config"}`, "", "module and key are required"},
		{`{"module":"busy","kind":"config","key":"k"}`, "", "the client is busy: context deadline exceeded"},
		{`not json`, "", "request is not {module, kind, key}: invalid character 'o' in literal null (expecting 'u')"},
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
