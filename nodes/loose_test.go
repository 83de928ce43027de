package nodes

import (
	"testing"
)

// A controller that writes a placement value or an offer's have value as
// a number or true/false means its text, as a provider's bound entry does:
// ${port:http} is filled with 8417, ${bound:pg:port} judged by have with
// 5432, the number as written (5.0 stays 5.0). Read strictly, the whole
// plan failed on it.
func TestNumbersInPlacementAndHaveAreTheirText(t *testing.T) {
	a, err := ParseAssignment("ace.web", []byte(`{"provisioning":{
		"placement":{"port":{"http":8417,"tls":true,"ratio":5.0,"gone":null},"dir":{"state":"/var/lib/web"}},
		"provides":[{"provision":"pg","have":{"port":5432,"ssl":false,"host":"db"}},{"provision":"other","answered_by":"helper"}]}}`))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	pl := a.Provisioning.Placement
	for k, want := range map[string]string{"http": "8417", "tls": "true", "ratio": "5.0"} {
		if got, ok := pl["port"][k]; !ok || got != want {
			t.Errorf("placement.port.%s = %q (held %v), want %q", k, got, ok, want)
		}
	}
	if _, ok := pl["port"]["gone"]; ok {
		t.Errorf("placement.port.gone, null, is held: a null is a name the plan does not hold")
	}
	if pl["dir"]["state"] != "/var/lib/web" {
		t.Errorf("placement.dir.state = %q", pl["dir"]["state"])
	}
	o := a.Provisioning.Provides[0]
	if o.Provision != "pg" || o.Have["port"] != "5432" || o.Have["ssl"] != "false" || o.Have["host"] != "db" {
		t.Errorf("offer %+v, want pg with have port 5432, ssl false, host db", o)
	}
	if a.Provisioning.Provides[1].AnsweredBy != AnsweredByHelper {
		t.Errorf("the second offer lost its answerer: %+v", a.Provisioning.Provides[1])
	}

	// The same offers, read from the provider's plan on another node.
	offers, err := parseOffers([]byte(`{"provisioning":{"provides":[{"provision":"pg","answered-by":"helper","have":{"port":5432}}]}}`))
	if err != nil || len(offers) != 1 || offers[0].Have["port"] != "5432" || offers[0].AnsweredBy != AnsweredByHelper {
		t.Errorf("parseOffers: %+v, %v; want pg by the helper with have port 5432", offers, err)
	}
}
