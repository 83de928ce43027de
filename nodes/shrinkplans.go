package nodes

import (
	"encoding/json"
	"reflect"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Every client reads the whole assignments bucket (SPEC §2.2), and its
// watch gathers the first snapshot whole before handing it over: at
// 50,000 plans of ~2.4 KB that was ~120 MB of values (with the messages
// they were cut from, more), held until the daemon had applied the last,
// of which it keeps, for another node's plan, the names its provisions
// entries bind by and its offers (putAssignment, parseBindings). So the
// watch hands each value to ShrinkOthersPlans as it arrives (bus.Watch.
// Shrink), and keeps only what parseBindings reads of it.

// ShrinkOthersPlans is, for the client of node, a value of the assignments
// bucket cut to what the client reads of it. Another node's plan that
// parseBindings reads without error becomes {"provisioning":{"provisions":
// …,"provides":…}} with what it read there; one that offers is kept only
// when parseBindings reads that back as the very same provisions and
// offers (reflect's deep equality: an offer's empty have, which an offer
// does not write, fails it). That look is a third of the cut's cost and
// a plan without offers needs none, so those (most) are not looked at
// again: with it on every plan, reading a mesh of 50,000 again after a
// reconnect took ~0.5 s longer than reading it whole. Anything else (a key of node, or out of shape; a value that does
// not parse, names no plan, or is refused) is returned as it is: what the
// daemon says of it is reckoned from the whole value. So the mesh reads
// either value alike (putAssignment reads another node's plan with
// parseBindings alone). Safe to call from any goroutine.
func ShrinkOthersPlans(node string) func(key string, value []byte) []byte {
	return func(key string, value []byte) []byte {
		toks, err := spec.DecodeKey(key, 2)
		if err != nil || toks[0] == node {
			return value
		}
		asg, err := parseBindings(toks[0], toks[1], value)
		if err != nil {
			return value
		}
		var short struct {
			Provisioning struct {
				Provisions []ProvisionSpec `json:"provisions"`
				Provides   []Offer         `json:"provides"`
			} `json:"provisioning"`
		}
		short.Provisioning.Provisions, short.Provisioning.Provides = asg.Provisioning.Provisions, asg.Provisioning.Provides
		out, err := json.Marshal(short)
		if err != nil || len(out) >= len(value) {
			return value
		}
		if len(asg.Provisioning.Provides) == 0 {
			// Provisions alone (most plans) read back alike by
			// construction: a ProvisionSpec is text, written whole but
			// for an empty text (TestShrinkOthersPlansProvisionSpecIsText).
			return out
		}
		if back, err := parseBindings(toks[0], toks[1], out); err != nil || !reflect.DeepEqual(back, asg) {
			return value
		}
		return out
	}
}
