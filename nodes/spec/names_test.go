package spec

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{OwnSecretName("claude-code", "api-key"), "own/claude-code/api-key"},
		{ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", ""), "provision/gitea/gitea-read/ace/claude-code"},
		{ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", "second"), "provision/gitea/gitea-read/ace/claude-code/second"},
		{PairSecretName("gitea", "gitea-read", "g14", "claude-code", ""), "pair/gitea/gitea-read/g14/claude-code"},
		{PairSecretName("gitea", "gitea-read", "g14", "claude-code", "second"), "pair/gitea/gitea-read/g14/claude-code/second"},
		{VaultGetSubject("ace"), "mesh-vault.get.provisioner.ace"},
		{VaultGetSubject("a.b"), "mesh-vault.get.provisioner.a=2Eb"},
		{AppliedSubject("ace", "claude.code"), "prov.applied.ace.claude=2Ecode"},
		{ChangedSubject("a.b", "web"), "prov.changed.a=2Eb.web"},
		{AskSubject("rack.1"), "prov.ask.rack=2E1"},
		{BoundBucket("gitea"), "gitea_bound"},
		{BoundKey("ace", "web", "svc", ""), "ace.web.svc"},
		{BoundKey("ace", "web", "svc", "l.2"), "ace.web.svc.l=2E2"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestNamesInverses(t *testing.T) {
	for _, c := range []struct {
		name string
		want VaultName
	}{
		{OwnSecretName("web", "ab"), VaultName{Class: VaultOwn, Module: "web", Name: "ab"}},
		{ProvisionSecretName("gitea", "read", "ace", "web", ""), VaultName{Class: VaultProvision, Provider: "gitea", Provision: "read", Node: "ace", Module: "web"}},
		{ProvisionSecretName("gitea", "read", "ace", "web", "l"), VaultName{Class: VaultProvision, Provider: "gitea", Provision: "read", Node: "ace", Module: "web", Local: "l"}},
		{PairSecretName("gitea", "read", "g14", "web", ""), VaultName{Class: VaultPair, Provider: "gitea", Provision: "read", Node: "g14", Module: "web"}},
		{PairSecretName("gitea", "read", "g14", "web", "l"), VaultName{Class: VaultPair, Provider: "gitea", Provision: "read", Node: "g14", Module: "web", Local: "l"}},
	} {
		got, err := ParseVaultName(c.name)
		if err != nil || got != c.want {
			t.Errorf("ParseVaultName(%q) = %+v, %v; want %+v", c.name, got, err, c.want)
		}
		if IsPairName(c.name) != (c.want.Class == VaultPair) {
			t.Errorf("IsPairName(%q) = %v", c.name, !(c.want.Class == VaultPair))
		}
	}
	for _, c := range []struct{ name, why string }{
		{"own/web", "is not own/<module>/<name>"},
		{"provision/g/r/ace/web/x/y", "is not provision/"},
		{"own/a/b/k", "is not own/<module>/<name>"},
		{"pair/g/r/ace", "is not pair/"},
		{"other/x/y", "is not own/, provision/ or pair/"},
	} {
		if _, err := ParseVaultName(c.name); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("ParseVaultName(%q) error = %v, want one saying %q", c.name, err, c.why)
		}
	}
	for _, node := range []string{"ace", "rack.1", "grüße"} {
		if got, err := VaultGetNode(VaultGetSubject(node)); err != nil || got != node {
			t.Errorf("VaultGetNode(VaultGetSubject(%q)) = %q, %v", node, got, err)
		}
	}
	for _, s := range []string{"mesh-vault.get.provisioner.", "mesh-vault.get.provisioner.a.b", "mesh-vault.get.other.a", "mesh-vault.get.provisioner.=2"} {
		if _, err := VaultGetNode(s); err == nil {
			t.Errorf("VaultGetNode(%q) took it", s)
		}
	}
	if p, ok := BoundProvider(BoundBucket("gitea")); !ok || p != "gitea" {
		t.Errorf("BoundProvider(BoundBucket(gitea)) = %q, %v", p, ok)
	}
	if _, ok := BoundProvider("mesh-provisioner_collect"); ok {
		t.Errorf("BoundProvider took a bucket that is not a provider's")
	}
}

// The longest key and subject the client can build from names bounded by
// MaxNameBytes fit NATS's max control line, with the longest reply subject
// (an inbox under _INBOX.provisioner.<node>) and the sizes of an HPUB line.
func TestLongestKeyFitsTheBus(t *testing.T) {
	name := strings.Repeat("n", MaxNameBytes)
	longestKind := ""
	for _, r := range Kinds() {
		if len(r.Kind) > len(longestKind) {
			longestKind = string(r.Kind)
		}
	}
	keys := map[string]string{
		"need":    EncodeKey(name, name, longestKind, name),
		"bound":   BoundKey(name, name, name, name),
		"collect": EncodeKey(name, name, name),
		"config":  EncodeKey(name, name, name),
		"applied": EncodeKey(name, name),
	}
	longestBucket := BoundBucket(name)
	for _, b := range []string{AssignmentsBucket, RegistryBucket, ConfigBucket, NeedsBucket, AppliedBucket, CollectBucket} {
		if len(b) > len(longestBucket) {
			longestBucket = b
		}
	}
	reply := "_INBOX.provisioner." + name + "." + strings.Repeat("x", 22) + "." + strings.Repeat("y", 22)
	for what, key := range keys {
		subject := "$KV." + longestBucket + "." + key
		line := "HPUB " + subject + " " + reply + " 4294967295 4294967295\r\n"
		if len(line) > MaxControlLine {
			t.Errorf("%s: a put of the longest key is a %d-byte line, over %d", what, len(line), MaxControlLine)
		}
	}
	for _, s := range []string{AppliedSubject(name, name), ChangedSubject(name, name), VaultGetSubject(name), AskSubject(name)} {
		if line := "HPUB " + s + " " + reply + " 4294967295 4294967295\r\n"; len(line) > MaxControlLine {
			t.Errorf("subject %.40s…: a %d-byte line, over %d", s, len(line), MaxControlLine)
		}
	}
	if msg := CheckNameLen("name", name); msg != "" {
		t.Errorf("a name of MaxNameBytes refused: %s", msg)
	}
	if msg := CheckNameLen("name", name[1:]+"."); !strings.Contains(msg, "is 257 bytes encoded, over the limit of 255 (MaxNameBytes)") {
		t.Errorf("a name of 257 bytes encoded: %q", msg)
	}
}
