package auth

import (
	"fmt"
	"io"
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Account is the one account every user lives in: they all share one
// JetStream domain (the buckets of SPEC §2.2).
const Account = "MESH"

// DevPassword is the password the example configuration gives user.
// DEV ONLY: these passwords are published in the repository.
func DevPassword(user string) string { return "dev-only-" + user }

// Regenerate is the command that writes examples/nats/server.conf.
const Regenerate = "go run ./cmd/mesh-provisioner rights --format conf --all --node ace,g14 --provider gitea > examples/nats/server.conf"

const confHead = `# nats-server configuration for the example mesh (nodes %[1]s).
#
# GENERATED from nodes/spec RightsOf, the one source of every user's
# rights; do not edit. Regenerate with
#   %[2]s
#
# DEV ONLY: the passwords below are published in this repository. For a real
# fleet run the bus in operator mode (nsc) and give each user below a creds
# file with the same permissions (mesh-provisioner rights --format nsc
# prints the nsc commands); see examples/README.md.
#
# Every user lives in one account, %[3]s, because they all share one
# JetStream domain (the buckets of SPEC §2.2). Each user is confined by its
# own publish/subscribe permissions; anything not allowed is denied.
#
# Subjects starting with '$' are quoted: unquoted, the config parser would
# read them as variables.
#
# How the SPEC's names map to users here:
#   bus account provisioner.<node>  -> user provisioner-<node>  (the client)
#   the node's tool runner          -> user toolrunner-<node>
#   mesh-provisioner, mesh-vault, mesh-controller, mesh-config, <provider>
#                                   -> users of the same names (services)
#   lab                             -> user lab (administers everything)
# Every user except lab takes its replies on its own inbox prefix and must
# connect with nats.CustomInboxPrefix("_INBOX.<prefix>"):
#   provisioner-<node> -> _INBOX.provisioner.<node>
#   toolrunner-<node>  -> _INBOX.toolrunner.<node>
#   a service <name>   -> _INBOX.<name>
# so no user can read replies (KV watch deliveries, vault answers) meant for
# another.

server_name: mesh-nats-1
listen: "0.0.0.0:4222"
http: "127.0.0.1:8222"

jetstream {
  store_dir: "/var/lib/nats/jetstream"
  max_memory_store: 256MB
  max_file_store: 10GB
}

accounts {
  %[3]s {
    jetstream: enabled
    users: [
`

// ServerConf writes a whole nats-server configuration: one account, the
// users of fleet with their dev passwords and rights.
func ServerConf(w io.Writer, nodes []string, fleet []spec.Rights) error {
	var b strings.Builder
	fmt.Fprintf(&b, confHead, strings.Join(nodes, ", "), Regenerate, Account)
	for _, r := range fleet {
		b.WriteString("\n")
		comment(&b, "      ", "---- "+r.Comment)
		b.WriteString("      {\n")
		fmt.Fprintf(&b, "        user: %s\n", r.User)
		fmt.Fprintf(&b, "        password: %s\n", DevPassword(r.User))
		if !r.Unrestricted {
			permissions(&b, "        ", r)
		}
		b.WriteString("      }\n")
	}
	b.WriteString("    ]\n  }\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Permissions writes r as a nats-server permissions block (nothing for an
// unrestricted user but a comment saying so).
func Permissions(w io.Writer, r spec.Rights) error {
	var b strings.Builder
	comment(&b, "", "user "+r.User+": "+r.Comment)
	if r.Unrestricted {
		b.WriteString("# no permissions block: this user may do everything\n")
	} else {
		permissions(&b, "", r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func permissions(b *strings.Builder, in string, r spec.Rights) {
	b.WriteString(in + "permissions: {\n")
	allow(b, in+"  ", "publish", r.Publish)
	allow(b, in+"  ", "subscribe", r.Subscribe)
	if r.AllowResponses {
		b.WriteString(in + "  allow_responses: true\n")
	}
	b.WriteString(in + "}\n")
}

func allow(b *strings.Builder, in, verb string, rules []spec.Rule) {
	fmt.Fprintf(b, "%s%s: {\n%s  allow: [\n", in, verb, in)
	for i, r := range rules {
		if i > 0 && r.Why != "" {
			b.WriteString("\n")
		}
		if r.Why != "" {
			comment(b, in+"    ", r.Why)
		}
		for _, s := range r.Subjects {
			fmt.Fprintf(b, "%s    %q\n", in, s)
		}
	}
	fmt.Fprintf(b, "%s  ]\n%s}\n", in, in)
}

// comment writes text as '#' lines indented by in, wrapped near 78 columns.
func comment(b *strings.Builder, in, text string) {
	line := in + "#"
	for _, word := range strings.Fields(text) {
		if len(line)+1+len(word) > 78 && line != in+"#" {
			b.WriteString(line + "\n")
			line = in + "#"
		}
		line += " " + word
	}
	b.WriteString(line + "\n")
}
