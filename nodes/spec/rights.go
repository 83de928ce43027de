package spec

import (
	"fmt"
	"strings"
)

// Roles of the bus (SPEC §2.2, §2.3): who may publish and subscribe what.
// Rights is the one source of their allow-lists: examples/nats/server.conf,
// the lab's JWT users and `mesh-provisioner rights` are all made from it.
const (
	RoleClient     = "client"     // a node's provisioner client (bus account provisioner.<node>)
	RoleToolRunner = "toolrunner" // a node's tool runner: asks its node's client
	RoleServer     = "server"     // mesh-provisioner, the server
	RoleVault      = "vault"      // mesh-vault
	RoleProvider   = "provider"   // a provider P, writer of P_bound (the operator makes the bucket)
	RoleConfig     = "mesh-config"
	RoleController = "controller" // mesh-controller
	RoleOperator   = "operator"   // a person or a cron job: asks the server's verb, reads nothing else
	RoleLab        = "lab"        // the lab and the tests: no permissions, may do everything
)

// Roles lists every role, in the order a configuration lists their users.
var Roles = []string{RoleClient, RoleToolRunner, RoleServer, RoleVault, RoleController, RoleConfig, RoleProvider, RoleOperator, RoleLab}

// ArtifactsStore is the object store of templates archives the controller
// writes and every client reads.
const ArtifactsStore = "mesh-artifacts"

// Rule is a group of subjects and why the role holds them.
type Rule struct {
	Why      string   `json:"why,omitempty"`
	Subjects []string `json:"subjects"`
}

// Rights are one user's permissions. A user with Unrestricted set has no
// permissions block at all (the lab); otherwise anything not allowed is
// denied, and AllowResponses lets it publish replies to requests it got.
type Rights struct {
	Role           string `json:"role"`
	User           string `json:"user"`  // the user's name on the bus
	Inbox          string `json:"inbox"` // the reply prefix it must connect with ("" : the default)
	Comment        string `json:"comment"`
	Publish        []Rule `json:"publish,omitempty"`
	Subscribe      []Rule `json:"subscribe,omitempty"`
	AllowResponses bool   `json:"allow_responses"`
	Unrestricted   bool   `json:"unrestricted,omitempty"`
}

// PublishAllow is every subject Publish allows, in order.
func (r Rights) PublishAllow() []string { return flatten(r.Publish) }

// SubscribeAllow is every subject Subscribe allows, in order.
func (r Rights) SubscribeAllow() []string { return flatten(r.Subscribe) }

func flatten(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Subjects...)
	}
	return out
}

// RightsOf returns the rights of role. node names the node of a client or a
// tool runner; providers are the providers whose bindings a client reads
// (one <provider>_bound bucket each), or, for role provider, the one
// provider. A role that takes no node refuses one, and so on: the error
// names what is wrong.
func RightsOf(role, node string, providers []string) (Rights, error) {
	needNode := role == RoleClient || role == RoleToolRunner
	if needNode {
		if err := checkName("node", node); err != nil {
			return Rights{}, fmt.Errorf("role %s: %w", role, err)
		}
	} else if node != "" {
		return Rights{}, fmt.Errorf("role %s takes no node (got %q)", role, node)
	}
	for _, p := range providers {
		if err := checkProviderName(p); err != nil {
			return Rights{}, fmt.Errorf("role %s: %w", role, err)
		}
	}
	switch role {
	case RoleClient:
		return clientRights(node, providers), nil
	case RoleProvider:
		if len(providers) != 1 {
			return Rights{}, fmt.Errorf("role provider: name exactly one provider (got %d)", len(providers))
		}
		return providerRights(providers[0]), nil
	}
	if len(providers) > 0 && role != RoleClient {
		return Rights{}, fmt.Errorf("role %s takes no provider (got %q)", role, providers)
	}
	switch role {
	case RoleToolRunner:
		user := "toolrunner-" + node
		return Rights{Role: role, User: user, Inbox: toolRunnerInbox(node),
			Comment: "the tool runner of node " + node + ": only it may ask its node's client, and it hears what changed there",
			Publish: []Rule{{Subjects: []string{AskSubject(node)}}},
			Subscribe: []Rule{{Subjects: []string{toolRunnerInbox(node) + ".>"}},
				{Why: "SPEC §5.4: what moved on its node, so a tool runner told \"not assigned\" knows when to ask again",
					Subjects: []string{changedPrefix + EncodeToken(node) + ".>"}}}}, nil
	case RoleServer:
		return serverRights(), nil
	case RoleVault:
		return Rights{Role: role, User: "mesh-vault", Inbox: "_INBOX.mesh-vault",
			Comment: "mesh-vault: answers mesh-vault.get.provisioner.<node> (the subject tells it who asks), announces rotations, reads assignments to check what a node may have",
			Publish: []Rule{
				{Subjects: []string{VaultChangedSubject}},
				{Subjects: kvRead(AssignmentsBucket, "")},
				{Why: "its answers, on a client's inbox alone (" + answersWhy + ")",
					Subjects: []string{"_INBOX.provisioner.*.>"}},
			},
			Subscribe: []Rule{{Subjects: []string{"_INBOX.mesh-vault.>", VaultVerb + ".>"}}}}, nil
	case RoleController:
		return Rights{Role: role, User: "mesh-controller", Inbox: "_INBOX.mesh-controller",
			Comment: "mesh-controller: owns the assignments bucket and the mesh-artifacts object store (templates archives)",
			Publish: []Rule{
				{Subjects: []string{"$JS.API.INFO"}},
				{Subjects: kvOwn(AssignmentsBucket)},
				{Subjects: objOwn(ArtifactsStore)},
			},
			Subscribe: []Rule{{Subjects: []string{"_INBOX.mesh-controller.>"}}}}, nil
	case RoleConfig:
		return Rights{Role: role, User: "mesh-config", Inbox: "_INBOX.mesh-config",
			Comment: "mesh-config: owns mesh-config_resolved",
			Publish: []Rule{
				{Subjects: []string{"$JS.API.INFO"}},
				{Subjects: kvOwn(ConfigBucket)},
			},
			Subscribe: []Rule{{Subjects: []string{"_INBOX.mesh-config.>"}}}}, nil
	case RoleOperator:
		return Rights{Role: role, User: "mesh-operator", Inbox: "_INBOX.mesh-operator",
			Comment:   "an operator (a person, a cron job, a CI step): asks " + QuerySubject + " (SPEC §2.3: anyone may; it only reads), so mesh-provisioner sweep needs no creds that can write; nothing else",
			Publish:   []Rule{{Subjects: []string{QuerySubject}}},
			Subscribe: []Rule{{Subjects: []string{"_INBOX.mesh-operator.>"}}}}, nil
	case RoleLab:
		return Rights{Role: role, User: "lab", Unrestricted: true,
			Comment: "lab: the lab and the tests; no permissions block, so it may do everything (create every bucket, load the examples)"}, nil
	}
	return Rights{}, fmt.Errorf("unknown role %q (known: %v)", role, Roles)
}

// answersWhy says why an answerer holds a publish right on inboxes rather
// than allow_responses: that lets it answer on whatever subject a request
// names, so whoever may ask it could have it publish on prov.ask.<node>, a
// vault request or mesh-vault.secret-changed in its stead.
const answersWhy = "not allow_responses, which answers on any subject a request names"

// toolRunnerInbox is the reply prefix of node's tool runner.
func toolRunnerInbox(node string) string { return "_INBOX.toolrunner." + node }

// checkName refuses a node or provider name that is empty, too long
// (CheckNameLen) or that a key token would escape: it names a user, an
// inbox and a creds file, so it must stand as itself.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("no %s named", what)
	}
	if EncodeToken(name) != name || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%s %q: only A-Z a-z 0-9 - _ may stand in the name of a %s with bus rights (it names a user, an inbox and a creds file)", what, name, what)
	}
	if why := CheckNameLen(what+" "+name, name); why != "" {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// fixedRoles are the roles whose user and inbox are one name each, for
// the whole mesh.
var fixedRoles = []string{RoleServer, RoleVault, RoleController, RoleConfig, RoleOperator, RoleLab}

// checkProviderName is checkName for a provider, which also refuses a name
// another role's user or inboxes stand under: a provider P is user P with
// inbox _INBOX.P, so a provider named provisioner or toolrunner could read
// every node's client's or tool runner's answers (_INBOX.provisioner.>:
// config values, sealed vault replies; _INBOX.toolrunner.>: prov.ask's
// answers), and one named mesh-vault, provisioner-ace or lab was another
// user of the same name (a configuration nats-server refuses, or, with
// nsc, that user's rights replaced by a provider's). An outside audit.
func checkProviderName(p string) error {
	if err := checkName("provider", p); err != nil {
		return err
	}
	for _, word := range []string{"provisioner", "toolrunner"} { // the clients' and tool runners' users and inboxes
		if p == word || strings.HasPrefix(p, word+"-") {
			return fmt.Errorf("provider %q: a provider's name is its user's and its inbox's (_INBOX.%s), and %s… names the %s users and inboxes: name the provider otherwise", p, p, word, word)
		}
	}
	for _, role := range fixedRoles {
		r, _ := RightsOf(role, "", nil)
		if p == r.User || "_INBOX."+p == r.Inbox {
			return fmt.Errorf("provider %q: a provider's name is its user's and its inbox's (_INBOX.%s), and %s is the %s role's: name the provider otherwise", p, p, p, role)
		}
	}
	return nil
}

func clientRights(node string, providers []string) Rights {
	own := node + ".>"
	pub := []Rule{
		{Why: AssignmentsBucket + ": read the whole bucket", Subjects: kvRead(AssignmentsBucket, "")},
		{Why: RegistryBucket + ": read the whole bucket", Subjects: kvRead(RegistryBucket, "")},
		{Why: ConfigBucket + ": read keys " + own + " only", Subjects: kvRead(ConfigBucket, own)},
	}
	for _, p := range providers {
		b := BoundBucket(p)
		pub = append(pub, Rule{Why: b + ": read keys " + own + " only", Subjects: kvRead(b, own)})
	}
	for _, b := range []string{NeedsBucket, AppliedBucket, CollectBucket} {
		pub = append(pub, Rule{Why: b + ": read and write keys " + own + " only",
			Subjects: append([]string{"$KV." + b + "." + own}, kvRead(b, own)...)})
	}
	pub = append(pub,
		Rule{Why: ArtifactsStore + " object store (templates archives): read only", Subjects: objRead(ArtifactsStore)},
		Rule{Why: "subjects of SPEC §2.3 (r2: the client asks nothing of the server, so no right on " + QuerySubject + ")",
			Subjects: []string{VaultGetSubject(node), appliedPrefix + own, changedPrefix + own}},
		Rule{Why: "its answers to " + AskSubject(node) + ", on the tool runner's inbox alone (" + answersWhy + ")",
			Subjects: []string{toolRunnerInbox(node) + ".>"}},
	)
	return Rights{Role: RoleClient, User: "provisioner-" + node, Inbox: ClientInbox(node),
		Comment:   "the provisioner client of node " + node + " (SPEC bus account provisioner." + node + ")",
		Publish:   pub,
		Subscribe: []Rule{{Subjects: []string{ClientInbox(node) + ".>", VaultChangedSubject, AskSubject(node)}}}}
}

func serverRights() Rights {
	pub := []Rule{{Subjects: []string{"$JS.API.INFO"}}, {Subjects: kvOwn(RegistryBucket)}}
	// It makes and reads the clients' three buckets but writes no key of them;
	// it purges their old delete markers (kvManage covers STREAM.PURGE).
	for _, b := range []string{NeedsBucket, AppliedBucket, CollectBucket} {
		pub = append(pub, Rule{Subjects: kvManage(b)})
	}
	pub = append(pub, Rule{Why: AssignmentsBucket + ": read only, for the sweep (which modules are assigned, who provides what)",
		Subjects: kvRead(AssignmentsBucket, "")},
		Rule{Why: "its own verb: mesh-provisioner sweep runs with these creds (from a cron job or a CI step, SPEC §6.2)",
			Subjects: []string{QuerySubject}},
		Rule{Why: "its answers, on an inbox alone (anyone may ask; " + answersWhy + ")",
			Subjects: []string{"_INBOX.>"}})
	return Rights{Role: RoleServer, User: "mesh-provisioner", Inbox: "_INBOX.mesh-provisioner",
		Comment: "mesh-provisioner, the server: owns its four buckets (creates them, writes the registry), reads every node's needs, applied and collect keys and the assignments (for the sweep), answers " + QuerySubject + " (and may ask it: the sweep command runs with these rights)",
		Publish: pub,
		Subscribe: []Rule{
			{Subjects: []string{"_INBOX.mesh-provisioner.>", QuerySubject}},
			{Why: "JetStream's advisory that one of its four buckets was deleted, so it makes the bucket again at once",
				Subjects: bucketDeletedAdvisories(RegistryBucket, NeedsBucket, AppliedBucket, CollectBucket)},
		}}
}

// BucketDeletedAdvisory is the subject JetStream announces on that bucket
// b's stream was deleted.
func BucketDeletedAdvisory(b string) string { return "$JS.EVENT.ADVISORY.STREAM.DELETED.KV_" + b }

func bucketDeletedAdvisories(buckets ...string) []string {
	out := make([]string, len(buckets))
	for i, b := range buckets {
		out[i] = BucketDeletedAdvisory(b)
	}
	return out
}

func providerRights(p string) Rights {
	b := BoundBucket(p)
	return Rights{Role: RoleProvider, User: p, Inbox: "_INBOX." + p,
		Comment: p + ", a provider: writes every key of " + b + " (made by the operator or the lab, not by it), reads assignments to learn its consumers and (SPEC §2.3 r2) reads, never writes, every node's needs",
		Publish: []Rule{
			{Subjects: []string{"$JS.API.INFO"}},
			{Why: b + ": read and write every key, purge its old markers; not make, change or delete its stream (a stream's subjects are in the request's body, where no permission looks: it could make it keep every node's inbox)",
				Subjects: kvWrite(b)},
			{Subjects: kvRead(AssignmentsBucket, "")},
			{Subjects: kvRead(NeedsBucket, "")},
		},
		Subscribe: []Rule{{Subjects: []string{"_INBOX." + p + ".>"}}}}
}

// kvRead is what reading bucket b takes (NATS-NOTES "Permissions"): keys
// under filter only ("node.>"), or every key when filter is "". $JS.FC is
// easy to miss: without it a large watch stalls.
func kvRead(b, filter string) []string {
	s := "KV_" + b
	if filter == "" {
		return []string{
			"$JS.API.STREAM.INFO." + s,
			"$JS.API.DIRECT.GET." + s,
			"$JS.API.DIRECT.GET." + s + ".>",
			"$JS.API.CONSUMER.CREATE." + s + ".>",
			"$JS.API.CONSUMER.DELETE." + s + ".*",
			"$JS.FC." + s + ".>",
		}
	}
	kv := "$KV." + b + "." + filter
	return []string{
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.DIRECT.GET." + s + "." + kv,
		"$JS.API.CONSUMER.CREATE." + s + ".*." + kv,
		"$JS.API.CONSUMER.DELETE." + s + ".*",
		"$JS.FC." + s + ".>",
	}
}

// kvManage is every JetStream API call on bucket b's stream (create,
// update, delete, read every key), but no write of a key.
func kvManage(b string) []string {
	s := "KV_" + b
	return []string{"$JS.API.*.*." + s, "$JS.API.*.*." + s + ".>", "$JS.FC." + s + ".>"}
}

// kvWrite is reading and writing every key of bucket b and purging its
// stream, but not making, changing or deleting the stream: a stream's
// subjects (and a republish) are in the request's body, where no
// permission looks, so one who may change it may have it keep any
// subject of the account, every node's inbox included.
func kvWrite(b string) []string {
	return append(kvRead(b, ""), "$JS.API.STREAM.PURGE.KV_"+b, "$KV."+b+".>")
}

// kvOwn is what owning bucket b takes: kvManage and writing every key.
func kvOwn(b string) []string { return append(kvManage(b), "$KV."+b+".>") }

// objRead is what reading object store o takes.
func objRead(o string) []string {
	s := "OBJ_" + o
	return []string{
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		"$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.DELETE." + s + ".*",
		"$JS.FC." + s + ".>",
	}
}

// objOwn is what owning object store o takes.
func objOwn(o string) []string {
	s := "OBJ_" + o
	return []string{"$JS.API.*.*." + s, "$JS.API.*.*." + s + ".>", "$JS.FC." + s + ".>", "$O." + o + ".>"}
}

// Fleet is every user of a mesh of nodes whose bindings come from
// providers, in the order a configuration lists them: each node's client,
// each node's tool runner, the services, each provider, the lab.
func Fleet(nodes, providers []string) ([]Rights, error) {
	var out []Rights
	add := func(role, node string, ps []string) error {
		r, err := RightsOf(role, node, ps)
		if err == nil {
			out = append(out, r)
		}
		return err
	}
	for _, n := range nodes {
		if err := add(RoleClient, n, providers); err != nil {
			return nil, err
		}
	}
	for _, n := range nodes {
		if err := add(RoleToolRunner, n, nil); err != nil {
			return nil, err
		}
	}
	for _, role := range []string{RoleServer, RoleVault, RoleController, RoleConfig} {
		if err := add(role, "", nil); err != nil {
			return nil, err
		}
	}
	for _, p := range providers {
		if err := add(RoleProvider, "", []string{p}); err != nil {
			return nil, err
		}
	}
	for _, role := range []string{RoleOperator, RoleLab} {
		if err := add(role, "", nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
