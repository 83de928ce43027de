package spec

// Kind is a placeholder kind: the K of ${K:name} (SPEC §4.1). A parsed
// template may name any kind [a-z][a-z0-9-]*; the ones this client fills
// are the rows of the table below. It is a type of its own so that it is
// never mistaken for a kind of graph node (nodes.Kind*), some of which are
// spelt the same.
type Kind string

// ValidKind says whether k is a kind's spelling, [a-z][a-z0-9-]* (SPEC
// §4.1): what a template may name, and so what a need's key may hold.
func ValidKind[T string | []byte](k T) bool {
	if len(k) == 0 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// The kinds this client fills.
const (
	Config       Kind = "config"
	Dir          Kind = "dir"
	Port         Kind = "port"
	Access       Kind = "access"
	Seat         Kind = "seat"
	Machine      Kind = "machine"
	Secret       Kind = "secret"
	Collected    Kind = "collected"
	Shell        Kind = "shell"
	Environment  Kind = "environment"
	Contribution Kind = "contribution"
	Consumers    Kind = "consumers"
	Bound        Kind = "bound"
)

// Source is where a kind's values come from (the "from" of SPEC §4.1).
type Source int

const (
	FromConfig     Source = iota + 1 // mesh-config_resolved <node>.<module>.<key>
	FromPlacement                    // placement.<kind>.<name> of the module's own plan
	FromVault                        // a secret the vault seals (§4.2)
	FromCollection                   // a collection's text (§4.4)
	FromConsumers                    // the consumers list: assignments and the vault (§4.5)
	FromBound                        // a provider's bound entry (§4.6)
)

// KindRow is one filled kind: where its values come from and its registry
// entry (SPEC §6.1), whose Bucket and Verb are where this client reads it.
type KindRow struct {
	Kind   Kind
	Source Source
	// Secret: the values are secrets (a vault secret, a consumers list of
	// credentials): never in a bucket, report, event or log, so never in an
	// item.
	Secret bool
	// The registry entry; empty fields are left out of its JSON.
	Owner, Verb, Bucket, Key, Field string
}

const (
	assignmentKey = "<node>.<module>"
	collectKey    = "<node>.<collection>.<contributor>"
)

func placement(k Kind) KindRow {
	return KindRow{Kind: k, Source: FromPlacement, Owner: "mesh-controller", Bucket: AssignmentsBucket,
		Key: assignmentKey, Field: "provisioning.placement." + string(k)}
}

func collection(k Kind) KindRow {
	return KindRow{Kind: k, Source: FromCollection, Owner: "mesh-provisioner", Bucket: CollectBucket, Key: collectKey}
}

// kinds is the one table of the kinds this client fills: the template
// parser, the registry the server writes, where the client reads each
// kind, and the scale generator all derive from it. Adding a kind is a row
// here and the code that builds its need node in package nodes.
var kinds = []KindRow{
	{Kind: Config, Source: FromConfig, Owner: "mesh-config", Bucket: ConfigBucket, Key: "<node>.<module>.<key>"},
	placement(Dir), placement(Port), placement(Access), placement(Seat), placement(Machine),
	{Kind: Secret, Source: FromVault, Secret: true, Owner: "mesh-vault", Verb: VaultVerb},
	collection(Collected), collection(Shell), collection(Environment), collection(Contribution),
	{Kind: Consumers, Source: FromConsumers, Secret: true, Owner: "mesh-vault", Verb: VaultVerb, Bucket: AssignmentsBucket, Key: assignmentKey},
	{Kind: Bound, Source: FromBound, Owner: "<provider>", Bucket: BoundBucket("<provider>"), Key: "<node>.<module>.<provision>[.<local>]"},
}

var byKind = func() map[Kind]KindRow {
	m := make(map[Kind]KindRow, len(kinds))
	for _, r := range kinds {
		m[r.Kind] = r
	}
	return m
}()

// Kinds are the rows of the table, in its order.
func Kinds() []KindRow { return append([]KindRow(nil), kinds...) }

// KindsFrom are the kinds whose values come from src, in the table's order.
func KindsFrom(src Source) []Kind {
	var out []Kind
	for _, r := range kinds {
		if r.Source == src {
			out = append(out, r.Kind)
		}
	}
	return out
}

// Lookup is the row of kind, and false when this client does not fill it.
func Lookup(kind Kind) (KindRow, bool) {
	r, ok := byKind[kind]
	return r, ok
}

// IsFilled says whether this client fills kind.
func IsFilled(kind Kind) bool {
	_, ok := byKind[kind]
	return ok
}

// IsSecretKind says whether kind's values are secrets.
func IsSecretKind(kind Kind) bool { return byKind[kind].Secret }

// IsPlacementKind says whether kind is answered by the plan's placement.
func IsPlacementKind(kind Kind) bool {
	r, ok := byKind[kind]
	return ok && r.Source == FromPlacement
}

// IsCollectionKind says whether kind names a collection's text.
func IsCollectionKind(kind Kind) bool {
	r, ok := byKind[kind]
	return ok && r.Source == FromCollection
}
