package nodes

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestProvidesTakesStringsAndOfferObjects(t *testing.T) {
	a, err := ParseAssignment("ace.gitea", []byte(`{"node":"ace","module":"gitea","provisioning":{"provides":[
		"plain",
		{"provision":"forge-account","answered_by":"helper"},
		{"provision":"gitea-read","have":{"url":"https://forge"}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := a.Provisioning.Provides
	if len(p) != 3 || p[0].Provision != "plain" || p[0].Have != nil || p[1].AnsweredBy != AnsweredByHelper || p[2].Have["url"] != "https://forge" {
		t.Fatalf("provides %+v", p)
	}
	b, _ := json.Marshal(p)
	if want := `["plain",{"provision":"forge-account","answered_by":"helper"},{"provision":"gitea-read","have":{"url":"https://forge"}}]`; string(b) != want {
		t.Fatalf("provides written back as %s, want %s", b, want)
	}
	for _, x := range []string{"plain", "forge-account", "gitea-read"} {
		if !a.Provisioning.ProvidesProvision(x) {
			t.Errorf("does not provide %s", x)
		}
	}
}

// The sweep commit writes "answered-by": it names the helper as
// "answered_by" does, so the provider's other offers are judged by their
// have, not by the helper's entries.
func TestAnsweredByIsReadInTheSweepCommitsSpellingToo(t *testing.T) {
	var p []Offer
	if err := json.Unmarshal([]byte(`[{"provision":"forge-account","answered-by":"helper"},{"provision":"gitea-read","have":{"url":"u"}},
		{"provision":"both","answered_by":"helper","answered-by":"other"}]`), &p); err != nil {
		t.Fatal(err)
	}
	if p[0].AnsweredBy != AnsweredByHelper || p[2].AnsweredBy != AnsweredByHelper {
		t.Fatalf("offers %+v", p)
	}
	if j := Judge(p, "gitea-read"); j.Rule != RuleHave || j.Have["url"] != "u" {
		t.Errorf("gitea-read judged %+v, want by its have", j)
	}
	if j := Judge(p, "forge-account"); j.Rule != RuleHelper {
		t.Errorf("forge-account judged %+v, want by its helper", j)
	}
}

func TestAMalformedOfferFailsTheModuleNamingIt(t *testing.T) {
	for _, c := range []struct{ provides, want string }{
		{`[42]`, `provides entry 42 is neither a provision's name nor an offer object`},
		{`[{"provision":"x","have":{"url":{"a":3}}}]`, `provides entry {"provision":"x","have":{"url":{"a":3}}}: have.url is an object`},
		{`[{"provision":7,"have":{"url":3}}]`, `provides entry {"provision":7,"have":{"url":3}}: provision is a number, not text`},
		{`[{"provision":"x","answered_by":["helper"]}]`, `provides entry {"provision":"x","answered_by":["helper"]}: answered_by is a list, not text`},
		{`[{"provision":"x","answered_by":"robot"}]`, `provides[0] (x): answered_by "robot" is not "helper"`},
		{`[{"provision":"x","have":{"a}b":"v"}}]`, `provides[0] (x): have key "a}b" cannot be named`},
		{`["x",{"provision":"x","answered_by":"helper"}]`, `provides[1]: provision "x" is listed twice`},
		{`[{"answered_by":"helper"}]`, `provides[0]: provision "" is empty`},
	} {
		_, err := ParseAssignment("ace.gitea", []byte(`{"node":"ace","module":"gitea","provisioning":{"provides":`+c.provides+`}}`))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `module "gitea"`) {
			t.Errorf("provides %s: %v, want the module failed saying %q", c.provides, err, c.want)
		}
	}
}

func TestJudgeFollowsTheSpecsList(t *testing.T) {
	helper := Offer{Provision: "forge-account", AnsweredBy: AnsweredByHelper}
	have := Offer{Provision: "gitea-read", Have: map[string]string{"url": "u"}}
	for _, c := range []struct {
		provides []Offer
		x        string
		want     Rule
	}{
		{[]Offer{helper}, "gitea-read", RuleNotOffered},
		{[]Offer{helper, {Provision: "gitea-read", AnsweredBy: AnsweredByHelper}}, "gitea-read", RuleHelper},
		{[]Offer{helper, have}, "gitea-read", RuleHave},
		{[]Offer{have}, "gitea-read", RuleEntry},
		{[]Offer{{Provision: "gitea-read"}}, "gitea-read", RuleEntry},
	} {
		if got := Judge(c.provides, c.x); got.Rule != c.want {
			t.Errorf("Judge(%+v, %s) = %v, want %v", c.provides, c.x, got.Rule, c.want)
		}
	}
}
