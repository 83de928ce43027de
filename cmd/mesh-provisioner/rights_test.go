package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestTheExampleConfigIsGenerated: examples/nats/server.conf is what
// `rights --format conf --all` prints, so its rights are nodes/spec's.
func TestTheExampleConfigIsGenerated(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"rights", "--format", "conf", "--all", "--node", "ace,g14", "--provider", "gitea"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	have, err := os.ReadFile("../../examples/nats/server.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, stdout.Bytes()) {
		t.Errorf("examples/nats/server.conf is not what nodes/spec RightsOf makes; regenerate it with go generate ./examples, or from the repository's root\n  %s", auth.Regenerate)
	}
}

func TestRightsOfOneRole(t *testing.T) {
	t.Run("conf", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"rights", "--role", "client", "--node", "ace", "--provider", "gitea"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"permissions: {", `"$KV.mesh-provisioner_needs.ace.>"`, `"prov.ask.ace"`, `"_INBOX.toolrunner.ace.>"`,
			`"$JS.API.DIRECT.GET.KV_gitea_bound.$KV.gitea_bound.ace.>"`} {
			if !strings.Contains(out, want) {
				t.Errorf("no %s in\n%s", want, out)
			}
		}
		if strings.Contains(out, "g14") || strings.Contains(out, `"`+spec.QuerySubject+`"`) {
			t.Errorf("ace's client gets a right of g14 or on %s:\n%s", spec.QuerySubject, out)
		}
	})
	t.Run("nsc", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"rights", "--role", "toolrunner", "--node", "ace", "--format", "nsc"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		want := "nsc add user --account MESH --name toolrunner-ace \\\n  --allow-pub 'prov.ask.ace' \\\n  --allow-sub '_INBOX.toolrunner.ace.>' \\\n  --allow-sub 'prov.changed.ace.>'\n" +
			"nsc generate creds --account MESH --name toolrunner-ace > toolrunner-ace.creds\n"
		if !strings.HasSuffix(stdout.String(), want) {
			t.Errorf("got\n%s\nwant it to end with\n%s", stdout.String(), want)
		}
	})
	t.Run("nsc of a responder quotes $ and allows responses", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"rights", "--role", "provider", "--provider", "gitea", "--format", "nsc"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "--allow-pub '$KV.gitea_bound.>'") {
			t.Errorf("no quoted $KV right in\n%s", stdout.String())
		}
		if strings.Contains(stdout.String(), "--allow-pub-response") {
			t.Errorf("a provider answers no request, yet\n%s", stdout.String())
		}
	})
	t.Run("json", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"rights", "--role", "server", "--format", "json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var got spec.Rights
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want, _ := spec.RightsOf(spec.RoleServer, "", nil)
		if got.User != "mesh-provisioner" || !slices.Equal(got.PublishAllow(), want.PublishAllow()) || got.AllowResponses {
			t.Errorf("got %+v", got)
		}
	})
}

func TestRightsRefusesBadRolesAndNodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--role", "janitor"}, `"janitor"`},
		{[]string{"--role", "client"}, "no node named: give --node N"},
		{[]string{"--role", "toolrunner"}, "no node named: give --node N"},
		{[]string{"--role", "client", "--node", "a.b"}, `"a.b"`},
		{[]string{"--role", "client", "--node", "ace/x"}, `"ace/x"`},
		{[]string{"--role", "server", "--node", "ace"}, "takes no node"},
		{[]string{"--role", "provider"}, "exactly one provider (got 0): give --provider P"},
		{[]string{"--role", "provider", "--provider", "gitea,forgejo"}, "give --provider P"},
		{[]string{"--role", "client", "--node", "ace", "--format", "yaml"}, `"yaml"`},
		{[]string{"--all", "--role", "client"}, "--all"},
		// a configuration with no client in it would refuse every node
		{[]string{"--all"}, "--all needs --node"},
		{[]string{"--all", "--provider", "gitea", "--format", "nsc"}, "--all needs --node"},
		{[]string{}, "--role is required"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"rights"}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.says) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, stdout %d bytes; want 2 and a message naming %s", c.args, code, stderr.String(), stdout.Len(), c.says)
		}
	}
}

// A node or provider named twice (a list made by a script) is one user and
// one bucket's rights: a configuration with a user twice is not one
// nats-server takes, and nsc would be asked to add the user twice.
func TestRightsCountANameGivenTwiceOnce(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"rights", "--all", "--node", "ace,g14,ace", "--provider", "gitea,gitea", "--format", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var users []spec.Rights
	if err := json.Unmarshal(stdout.Bytes(), &users); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range users {
		seen[u.User]++
	}
	for user, n := range seen {
		if n != 1 {
			t.Errorf("user %s is in the list %d times", user, n)
		}
	}
	for _, user := range []string{"provisioner-ace", "provisioner-g14", "gitea"} {
		if seen[user] != 1 {
			t.Errorf("user %s: %d times, want once", user, seen[user])
		}
	}
	stdout.Reset()
	if code := run([]string{"rights", "--role", "client", "--node", "ace", "--provider", "gitea,gitea"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), `"$JS.API.STREAM.INFO.KV_gitea_bound"`); n != 1 {
		t.Errorf("gitea_bound's STREAM.INFO right is listed %d times, want once:\n%s", n, stdout.String())
	}
}

// A role typed wrong, with the --node the real role takes, is named as the
// typo it is: "role clinet takes no node" sent the operator to drop the
// node, and then told them the role was unknown.
func TestRightsNamesAnUnknownRoleBeforeItsNode(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"rights", "--role", "clinet", "--node", "ace"}, &stdout, &stderr)
	want := `mesh-provisioner rights: unknown role "clinet" (one of client, toolrunner, server, vault, controller, mesh-config, provider, operator, lab)` + "\n"
	if code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("exit %d, stderr %q, stdout %d bytes; want 2 and %q", code, stderr.String(), stdout.Len(), want)
	}
}
