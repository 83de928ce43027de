package spec

import (
	"slices"
	"strings"
	"testing"
)

// TestRightsFollowSPECr2: the properties SPEC §2.2/§2.3 r2 states, read
// off RightsOf.
func TestRightsFollowSPECr2(t *testing.T) {
	must := func(r Rights, err error) Rights {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	client := must(RightsOf(RoleClient, "ace", []string{"gitea", "forgejo"}))
	pub := client.PublishAllow()
	for _, s := range append(pub, client.SubscribeAllow()...) {
		if strings.Contains(s, QuerySubject) {
			t.Errorf("the client holds %s (r2: it asks nothing of the server)", s)
		}
		if strings.Contains(s, "g14") {
			t.Errorf("ace's client holds %s", s)
		}
	}
	for _, want := range []string{"$KV." + NeedsBucket + ".ace.>", VaultGetSubject("ace"),
		"$JS.API.DIRECT.GET.KV_forgejo_bound.$KV.forgejo_bound.ace.>", "$JS.FC.KV_" + AssignmentsBucket + ".>"} {
		if !slices.Contains(pub, want) {
			t.Errorf("the client may not publish %s", want)
		}
	}
	if !slices.Contains(client.SubscribeAllow(), AskSubject("ace")) || !slices.Contains(pub, "_INBOX.toolrunner.ace.>") {
		t.Error("the client cannot answer prov.ask.ace")
	}
	// allow_responses would let it answer on any subject an ask names.
	for _, r := range mustFleet(t) {
		if r.AllowResponses {
			t.Errorf("%s answers on any subject a request names (allow_responses)", r.User)
		}
	}

	provider := must(RightsOf(RoleProvider, "", []string{"gitea"}))
	ppub := provider.PublishAllow()
	if !slices.Contains(ppub, "$JS.API.CONSUMER.CREATE.KV_"+NeedsBucket+".>") {
		t.Error("a provider cannot read the needs (r2)")
	}
	if slices.ContainsFunc(ppub, func(s string) bool {
		return strings.HasPrefix(s, "$KV."+NeedsBucket) || strings.HasPrefix(s, "$JS.API.*.*.KV_"+NeedsBucket)
	}) {
		t.Errorf("a provider may write the needs: %q", ppub)
	}

	server := must(RightsOf(RoleServer, "", nil))
	if !slices.Contains(server.PublishAllow(), "$JS.API.CONSUMER.CREATE.KV_"+AssignmentsBucket+".>") {
		t.Error("the server cannot read the assignments for its sweep")
	}
	if slices.Contains(server.PublishAllow(), "$KV."+NeedsBucket+".>") {
		t.Error("the server writes needs")
	}
	// SPEC §6.2: mesh-provisioner sweep runs with the server's creds (it
	// connects with the server's inbox prefix).
	if !slices.Contains(server.PublishAllow(), QuerySubject) || !strings.HasPrefix("_INBOX.mesh-provisioner.x", server.Inbox) {
		t.Errorf("the server cannot ask its own verb (publish %q, inbox %q)", server.PublishAllow(), server.Inbox)
	}
	// It hears that one of its buckets was deleted, and of no other stream.
	for _, b := range []string{RegistryBucket, NeedsBucket, AppliedBucket, CollectBucket} {
		if !slices.Contains(server.SubscribeAllow(), "$JS.EVENT.ADVISORY.STREAM.DELETED.KV_"+b) {
			t.Errorf("the server does not hear that %s was deleted", b)
		}
	}
	for _, s := range server.SubscribeAllow() {
		if strings.HasPrefix(s, "$JS.EVENT.") && !strings.HasPrefix(s, "$JS.EVENT.ADVISORY.STREAM.DELETED.KV_mesh-provisioner_") {
			t.Errorf("the server hears %s", s)
		}
	}
	// Who may ask the verb: the server, the operator (and the lab,
	// unrestricted); no other role. The operator may do nothing else.
	op := must(RightsOf(RoleOperator, "", nil))
	if !slices.Equal(op.PublishAllow(), []string{QuerySubject}) ||
		!slices.Equal(op.SubscribeAllow(), []string{op.Inbox + ".>"}) || op.AllowResponses {
		t.Errorf("the operator publishes %q, hears %q, answers %v; want the verb and its own inbox alone",
			op.PublishAllow(), op.SubscribeAllow(), op.AllowResponses)
	}
	for _, r := range mustFleet(t) {
		if r.Unrestricted || r.Role == RoleServer || r.Role == RoleOperator {
			continue
		}
		if slices.ContainsFunc(r.PublishAllow(), func(s string) bool {
			return s == QuerySubject || s == ">" || s == "mesh-provisioner.>" || s == "mesh-provisioner.*"
		}) {
			t.Errorf("%s may ask %s", r.User, QuerySubject)
		}
	}
	if !must(RightsOf(RoleLab, "", nil)).Unrestricted {
		t.Error("the lab is restricted")
	}
}

func TestRightsOfRefusesWhatCannotBe(t *testing.T) {
	for _, c := range []struct {
		role, node string
		providers  []string
		says       string
	}{
		{"janitor", "", nil, `"janitor"`},
		{RoleClient, "", nil, "no node"},
		{RoleClient, "a.b", nil, `"a.b"`},
		{RoleToolRunner, "x y", nil, `"x y"`},
		{RoleClient, "ace", []string{"git/ea"}, `"git/ea"`},
		{RoleVault, "ace", nil, "takes no node"},
		{RoleVault, "", []string{"gitea"}, "takes no provider"},
		{RoleProvider, "", nil, "exactly one provider"},
		{RoleClient, strings.Repeat("n", MaxNameBytes+1), nil, "MaxNameBytes"},
		// A provider named as another role's user or inboxes would take
		// them (an outside audit: provider provisioner read every node's
		// client's answers under _INBOX.provisioner.>).
		{RoleProvider, "", []string{"provisioner"}, "name the provider otherwise"},
		{RoleProvider, "", []string{"toolrunner"}, "name the provider otherwise"},
		{RoleProvider, "", []string{"provisioner-ace"}, "name the provider otherwise"},
		{RoleProvider, "", []string{"toolrunner-ace"}, "name the provider otherwise"},
		{RoleProvider, "", []string{"mesh-vault"}, "the vault role's"},
		{RoleProvider, "", []string{"mesh-provisioner"}, "the server role's"},
		{RoleProvider, "", []string{"mesh-operator"}, "the operator role's"},
		{RoleProvider, "", []string{"lab"}, "the lab role's"},
		{RoleClient, "ace", []string{"gitea", "provisioner"}, "name the provider otherwise"},
	} {
		if _, err := RightsOf(c.role, c.node, c.providers); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("RightsOf(%q, %q, %q) = %v; want an error saying %s", c.role, c.node, c.providers, err, c.says)
		}
	}
}

func TestFleetListsEveryUserOnce(t *testing.T) {
	users, err := Fleet([]string{"ace", "g14"}, []string{"gitea"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range users {
		names = append(names, r.User)
	}
	want := []string{"provisioner-ace", "provisioner-g14", "toolrunner-ace", "toolrunner-g14",
		"mesh-provisioner", "mesh-vault", "mesh-controller", "mesh-config", "gitea", "mesh-operator", "lab"}
	if !slices.Equal(names, want) {
		t.Errorf("Fleet users %q, want %q", names, want)
	}
}

func mustFleet(t *testing.T) []Rights {
	t.Helper()
	users, err := Fleet([]string{"ace", "g14"}, []string{"gitea"})
	if err != nil {
		t.Fatal(err)
	}
	return users
}
