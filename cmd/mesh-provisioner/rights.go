package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// rightsCmd prints the bus rights of one role (or, with --all, of every
// user of a mesh) from nodes/spec RightsOf: as a nats-server permissions
// block or configuration, as nsc commands, or as JSON.
func rightsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mesh-provisioner rights", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	role := fs.String("role", "", "the role: "+strings.Join(spec.Roles, ", "))
	node := fs.String("node", "", "the node of a client or tool runner (with --all: the nodes, comma-separated)")
	provider := fs.String("provider", "", "providers, comma-separated: whose bindings a client reads; the one provider of role provider")
	format := fs.String("format", "conf", "conf (nats-server), nsc (commands) or json")
	account := fs.String("account", auth.Account, "the account of the nsc commands")
	all := fs.Bool("all", false, "every user of the mesh of --node and --provider (conf: a whole nats-server configuration)")
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mesh-provisioner rights: "+format+"\n", a...)
		return 2
	}
	if *format != "conf" && *format != "nsc" && *format != "json" {
		return fail("--format %q is not conf, nsc or json", *format)
	}
	providers := list(*provider)
	var users []spec.Rights
	if *all {
		if *role != "" {
			return fail("--all takes no --role")
		}
		nodes := list(*node)
		// Every user of a mesh includes its nodes' clients: without them
		// the configuration would be complete-looking and refuse every node.
		if len(nodes) == 0 {
			return fail("--all needs --node: the nodes of the mesh, comma-separated")
		}
		fleet, err := spec.Fleet(nodes, providers)
		if err != nil {
			return fail("%v", err)
		}
		if *format == "conf" {
			if err := auth.ServerConf(stdout, nodes, fleet); err != nil {
				return fail("%v", err)
			}
			return 0
		}
		users = fleet
	} else {
		if *role == "" {
			return fail("--role is required (one of %s), or --all", strings.Join(spec.Roles, ", "))
		}
		// The role first: a typo'd role with the --node its real role
		// takes would otherwise be refused for the node.
		if !slices.Contains(spec.Roles, *role) {
			return fail("unknown role %q (one of %s)", *role, strings.Join(spec.Roles, ", "))
		}
		r, err := spec.RightsOf(*role, *node, providers)
		if err != nil {
			return fail("%v%s", err, rightsHint(*role, *node, providers))
		}
		users = []spec.Rights{r}
	}
	var err error
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if *all {
			err = enc.Encode(users)
		} else {
			err = enc.Encode(users[0])
		}
	default:
		for i, r := range users {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if *format == "nsc" {
				err = auth.NSC(stdout, *account, r)
			} else {
				err = auth.Permissions(stdout, r)
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner rights: %v\n", err)
		return 1
	}
	return 0
}

// rightsHint is the flag an operator left out, for the refusals RightsOf
// gives a role that names a node or a provider and was given none (or,
// for a provider, several): what to give, not only what is wrong.
func rightsHint(role, node string, providers []string) string {
	switch {
	case (role == spec.RoleClient || role == spec.RoleToolRunner) && node == "":
		return ": give --node N, the node this user is for"
	case role == spec.RoleProvider && len(providers) != 1:
		return ": give --provider P, the one provider whose user this is"
	}
	return ""
}

// list splits a comma-separated flag value, dropping empty items and
// any item given before (in the order first given): a node or provider
// named twice is one user, one bucket's rights.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
