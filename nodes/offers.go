package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// This file holds a provider's offers (SPEC §3 provides[], r2) and how a
// binding to one is judged by who answers it (SPEC §4.6).

// AnsweredByHelper is the one answerer an offer may name: the provider's
// helper, which answers each bind with an entry in <provider>_bound.
const AnsweredByHelper = "helper"

// Offer is one entry of a plan's provides[]: a provision's name (JSON: a
// string) or an offer object {"provision", "answered_by", "have"}.
type Offer struct {
	Provision  string            `json:"provision"`
	AnsweredBy string            `json:"answered_by,omitempty"`
	Have       map[string]string `json:"have,omitempty"`
}

// UnmarshalJSON takes a string (the provision's name) or an offer object.
// "answered-by", as the server's sweep commit spells it, is read as
// "answered_by" (SPEC §3's spelling, which wins when both are given): a
// helper named the other way was dropped unsaid, and every offer of the
// provider was then decided by the helper's entries, the very failure the
// commit was made for.
func (o *Offer) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*o = Offer{}
		return json.Unmarshal(b, &o.Provision)
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("provides entry %.60s is neither a provision's name nor an offer object {\"provision\", \"answered_by\", \"have\"}", b)
	}
	type plain Offer
	var p struct {
		plain
		Dashed string `json:"answered-by"` // the sweep commit's spelling, taken as answered_by
	}
	if err := json.Unmarshal(b, &p); err != nil {
		have, ok, lerr := looseHave(b, err)
		if !ok {
			return fmt.Errorf("provides entry %.60s: %w", b, offerWrongType(b, err))
		}
		if lerr != nil {
			return fmt.Errorf("provides entry %.60s: %w", b, lerr)
		}
		p.Have = have
	}
	*o = Offer(p.plain)
	dropHaveNulls(o, b) // a have key whose value is null is one the have lacks
	if o.AnsweredBy == "" {
		o.AnsweredBy = p.Dashed
	}
	return nil
}

// looseHave is the have of offer object b whose strict decoding failed
// with err, when err is a have value that is not text: a number or
// true/false is taken as its JSON text ("port": 5432, as a bound entry's,
// nulls.go), an object or a list refused by name (lerr). ok is false when
// err is something else.
func looseHave(b []byte, err error) (have map[string]string, ok bool, lerr error) {
	if _, typed := errors.AsType[*json.UnmarshalTypeError](err); !typed {
		return nil, false, nil
	}
	var p struct {
		Provision  string                     `json:"provision"`
		AnsweredBy string                     `json:"answered_by"`
		Dashed     string                     `json:"answered-by"`
		Have       map[string]json.RawMessage `json:"have"`
	}
	if json.Unmarshal(b, &p) != nil {
		return nil, false, nil // wrong elsewhere than in have
	}
	have, lerr = looseTexts("have", "a have value", p.Have)
	return have, true, lerr
}

// MarshalJSON writes an offer that says nothing but its name as a string.
func (o Offer) MarshalJSON() ([]byte, error) {
	if o.AnsweredBy == "" && o.Have == nil {
		return json.Marshal(o.Provision)
	}
	type plain Offer
	return json.Marshal(plain(o))
}

// check says what is wrong with an offer beyond its name ("" for nothing).
func (o Offer) check() string {
	if o.AnsweredBy != "" && o.AnsweredBy != AnsweredByHelper {
		return fmt.Sprintf("answered_by %q is not %q (the only answerer an offer may name)", o.AnsweredBy, AnsweredByHelper)
	}
	// A have key is K of ${bound:X[/L]:K}, which runs from the name's
	// first ":" to the "}" (ParseBoundName): it may hold ":" and "/"
	// (SPEC §4.1), but not "}" or a control byte, nor be empty.
	for _, k := range slices.Sorted(maps.Keys(o.Have)) {
		if msg := checkPlaceholderName(k); msg != "" {
			return fmt.Sprintf("have key %q cannot be named by ${bound:%s:<key>}", k, o.Provision)
		}
	}
	return ""
}

// checkProvides checks a plan's provides[]: each names a provision once,
// and an offer object names no answerer but the helper and only have keys
// a placeholder can name. It returns what is wrong ("" for nothing).
func checkProvides(provides []Offer) string {
	seen := map[string]bool{}
	for i, o := range provides {
		x := o.Provision
		if msg := checkProvisionName(x); msg != "" {
			return fmt.Sprintf("provides[%d]: provision %q %s", i, x, msg)
		}
		if seen[x] {
			return fmt.Sprintf("provides[%d]: provision %q is listed twice", i, x)
		}
		seen[x] = true
		if msg := o.check(); msg != "" {
			return fmt.Sprintf("provides[%d] (%s): %s", i, x, msg)
		}
	}
	return ""
}

// Rule is how a binding to a provider's offer is judged (SPEC §4.6).
type Rule int

const (
	// RuleUnknown: the provider is assigned nowhere yet (or its plan is
	// refused): no offer is known to judge by.
	RuleUnknown Rule = iota
	// RuleNotOffered: the provider does not offer the provision.
	RuleNotOffered
	// RuleHelper: the offer says its helper answers it: the entry decides.
	RuleHelper
	// RuleHave: another offer names a helper, this one does not: it is
	// judged by its have alone.
	RuleHave
	// RuleEntry: no offer of the provider names a helper: the entry (the
	// provider's own program writes it) decides.
	RuleEntry
)

// ReadsEntry says whether a binding judged by r reads <provider>_bound.
func (r Rule) ReadsEntry() bool { return r == RuleHelper || r == RuleEntry }

// Judgement is a provider's offer X as a binding to it is judged: the rule
// and, for RuleHave, the offer's have (not secret: the same for every
// consumer). It is the value of an offer node.
type Judgement struct {
	Rule Rule
	Have map[string]string
}

// Equal is the cutoff: the same rule and have.
func (j Judgement) Equal(o any) bool {
	k, ok := o.(Judgement)
	return ok && j.Rule == k.Rule && maps.Equal(j.Have, k.Have)
}

// Judge says how a binding to offer x is judged from the provider's
// provides (SPEC §4.6's list, in its order).
func Judge(provides []Offer, x string) Judgement {
	var mine *Offer
	helper := false
	for i := range provides {
		if provides[i].Provision == x {
			mine = &provides[i]
		}
		if provides[i].AnsweredBy == AnsweredByHelper {
			helper = true
		}
	}
	switch {
	case mine == nil:
		return Judgement{Rule: RuleNotOffered}
	case mine.AnsweredBy == AnsweredByHelper:
		return Judgement{Rule: RuleHelper}
	case helper:
		have := mine.Have
		if have == nil {
			have = map[string]string{}
		}
		return Judgement{Rule: RuleHave, Have: have}
	}
	return Judgement{Rule: RuleEntry}
}

// ruleText says in words how provider's offer x is judged, for explain;
// assigned: the provider is assigned somewhere (a RuleUnknown is then its
// plan refused, not a provider assigned nowhere).
func ruleText(r Rule, provider, x string, assigned bool) string {
	b := provider + "_bound"
	switch r {
	case RuleNotOffered:
		return "not among " + provider + "'s provides"
	case RuleHelper:
		return "answered by its helper (the entry in " + b + " decides)"
	case RuleHave:
		return "judged by its have (no helper answers it)"
	case RuleEntry:
		return "the entry in " + b + " decides (no offer of " + provider + " names a helper)"
	}
	if assigned {
		return "not known (provider " + provider + "'s plan is refused)"
	}
	return "not known (provider " + provider + " is assigned nowhere yet)"
}
