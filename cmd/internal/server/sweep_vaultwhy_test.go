package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestACredentialTheVaultLacksOnEveryNodeIsOneFinding: a provision whose
// credential the vault holds for none of its consumers (the provider
// issued none) holds back the same module on every node with the client's
// why "vault provision/<provider>/<provision>/<node>/<module>: absent",
// which names each need's own node and module. The sweep says it as one
// finding naming every module it holds back (SPEC §6.2: "one provider
// that serves nobody is one finding"), as it does a provider refusing
// every bind; a second holder (a local) and another provision stay
// findings of their own, and a why naming another module's credential is
// not taken for the need's own.
func TestACredentialTheVaultLacksOnEveryNodeIsOneFinding(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	if _, _, err := PublishRegistry(testCtx(t), bucket(t, js, spec.RegistryBucket), Registry()); err != nil {
		t.Fatal(err)
	}
	as := assignmentsKV(t, js)
	plan := `{"provisioning":{"provisions":[{"name":"forge-token","provision":"gitea-read","provider":"gitea","credential":"token"},` +
		`{"name":"second-token","provision":"gitea-read","provider":"gitea","credential":"token","local":"second"}]}}`
	for _, n := range []string{"ace", "g14", "h1"} {
		put(t, as, n+".claude-code", plan)
	}
	put(t, as, "ace.web", `{"provisioning":{}}`)
	needs := bucket(t, js, spec.NeedsBucket)
	for _, n := range []string{"ace", "g14", "h1"} {
		putNeed(t, needs, n, "claude-code", "secret", "forge-token", "waiting",
			"vault "+spec.ProvisionSecretName("gitea", "gitea-read", n, "claude-code", "")+": absent")
	}
	for _, n := range []string{"ace", "g14"} {
		putNeed(t, needs, n, "claude-code", "secret", "second-token", "failed",
			"vault "+spec.ProvisionSecretName("gitea", "gitea-read", n, "claude-code", "second")+": refused: gitea issues one token per module")
	}
	// Not its own credential: left as the client wrote it.
	putNeed(t, needs, "ace", "web", "secret", "forge-token", "waiting",
		"vault "+spec.ProvisionSecretName("gitea", "gitea-read", "g14", "claude-code", "")+": absent")
	serveQuery(t, nc, js)

	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, line(f)+"|"+f.Why)
	}
	want := []string{
		"failed|mesh-vault|secret second-token|2|ace/claude-code,g14/claude-code|vault provision/gitea/gitea-read/<node>/<module>/second: refused: gitea issues one token per module",
		"waiting|mesh-vault|secret forge-token|3|ace/claude-code,g14/claude-code,h1/claude-code|vault provision/gitea/gitea-read/<node>/<module>: absent",
		"waiting|mesh-vault|secret forge-token|1|ace/web|vault provision/gitea/gitea-read/g14/claude-code: absent",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One need alone keeps the client's own words.
	r, err = AskSweep(testCtx(t), nc, "h1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Why != "vault provision/gitea/gitea-read/h1/claude-code: absent" {
		t.Errorf("h1's sweep: %+v", r.Findings)
	}
}
