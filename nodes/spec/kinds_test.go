package spec

import "testing"

func TestKindGroups(t *testing.T) {
	if len(Kinds()) != 13 {
		t.Fatalf("%d kinds, SPEC §4.1 fills 13", len(Kinds()))
	}
	for _, r := range Kinds() {
		placement := r.Kind == Dir || r.Kind == Port || r.Kind == Access || r.Kind == Seat || r.Kind == Machine
		collection := r.Kind == Collected || r.Kind == Shell || r.Kind == Environment || r.Kind == Contribution
		secret := r.Kind == Secret || r.Kind == Consumers
		if IsPlacementKind(r.Kind) != placement || IsCollectionKind(r.Kind) != collection || IsSecretKind(r.Kind) != secret {
			t.Errorf("%s: placement %v, collection %v, secret %v", r.Kind, IsPlacementKind(r.Kind), IsCollectionKind(r.Kind), IsSecretKind(r.Kind))
		}
		if got, ok := Lookup(r.Kind); !ok || got != r || !IsFilled(r.Kind) {
			t.Errorf("Lookup(%s) = %+v, %v", r.Kind, got, ok)
		}
		if r.Owner == "" || r.Verb == "" && r.Bucket == "" {
			t.Errorf("%s: the registry entry names no owner, or neither bucket nor verb: %+v", r.Kind, r)
		}
	}
	for _, k := range []Kind{"placement", "env", "", "vault", "need"} {
		if IsFilled(k) || IsPlacementKind(k) || IsCollectionKind(k) || IsSecretKind(k) {
			t.Errorf("kind %q was taken in", k)
		}
	}
	if got := KindsFrom(FromPlacement); len(got) != 5 || got[0] != Dir || got[4] != Machine {
		t.Errorf("KindsFrom(FromPlacement) = %v, want dir … machine in the table's order", got)
	}
}
