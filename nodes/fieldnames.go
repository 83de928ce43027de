package nodes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// JSON names are case-sensitive, and SPEC §3 gives a plan's exactly, but
// encoding/json matches a name to a field without case (and with Unicode
// folding: "ſecrets" is "secrets"), and takes the last of a field given
// twice. So {"Provisioning": …} was a plan, and {"path": "/a", "Path": "/b"}
// wrote /b, where any other reader of the assignment (jq, the controller, a
// reviewer) sees no plan, or /a. checkFieldNames refuses, in an assignment
// that parses, a name that is a field's but for case or folding and a
// field given twice, naming it and where it stands. A name no field has is
// let by, as ParseAssignment always did: the controller may add fields,
// and other domains' fields sit beside "provisioning". Placement names and
// an offer's have keys are the plan's own names, not fields: any case goes,
// but each once in its object (the last or the first, as the reader).

// fieldSchema is what names an object of a type may hold: its fields'
// JSON names and, per name, its index and the schema of its value; elem is
// an array's elements' and a map's values' schema. nil: a value whose
// names are not checked (a string, a number).
type fieldSchema struct {
	fields map[string]fieldOf
	elem   *fieldSchema
	isMap  bool // a map: its names are the plan's own (any case), each once
}

type fieldOf struct {
	name string
	i    int // its bit in a set of the fields seen (a plan type has fewer than 64)
	sch  *fieldSchema
}

var assignmentSchema = sync.OnceValue(func() *fieldSchema {
	return schemaOf(reflect.TypeFor[Assignment]())
})

func schemaOf(t reflect.Type) *fieldSchema {
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.Map:
		// A placement's names and a have's keys: any case, but a name
		// given twice in one object is read as its last by encoding/json
		// and as its first by other readers, so it is checked.
		return &fieldSchema{elem: schemaOf(t.Elem()), isMap: true}
	case reflect.Slice, reflect.Array:
		if e := schemaOf(t.Elem()); e != nil {
			return &fieldSchema{elem: e}
		}
		return nil
	case reflect.Struct:
		s := &fieldSchema{fields: map[string]fieldOf{}}
		add := func(name string, sch *fieldSchema) {
			if len(s.fields) == 64 {
				panic("nodes: a plan type of over 64 fields") // seen is a uint64
			}
			s.fields[name] = fieldOf{name: name, i: len(s.fields), sch: sch}
		}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			add(name, schemaOf(f.Type))
		}
		if t == reflect.TypeFor[Offer]() {
			add("answered-by", nil) // the sweep commit's spelling (Offer.UnmarshalJSON)
		}
		return s
	}
	return nil
}

// checkFieldNames says what is wrong with the names of data, an
// assignment that json.Unmarshal took (so valid JSON); "" for nothing.
func checkFieldNames(data []byte) string {
	sc := jsonScan{b: data}
	return sc.value(assignmentSchema())
}

// jsonScan walks valid JSON, checking object names against a schema. It
// reads names only; values not checked are skipped byte by byte. path is
// where it stands, made into text only for a reason (a 10,000-file plan
// is checked without a string made per file).
type jsonScan struct {
	b    []byte
	i    int
	path []pathStep
}

type pathStep struct {
	name string // a field's name, or "" for an element
	n    int    // an element's index
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// str reads the string at s.i (its opening quote) and returns its text,
// unescaped when it holds an escape.
func (s *jsonScan) str() []byte {
	start := s.i
	s.i++
	escaped := false
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			escaped = true
			s.i++
		}
		s.i++
	}
	s.i++
	raw := s.b[start:s.i]
	if !escaped {
		return raw[1 : len(raw)-1]
	}
	var out string
	_ = json.Unmarshal(raw, &out) // valid JSON: it unquotes
	return []byte(out)
}

// value checks the value at s.i against sch (nil: skipped).
func (s *jsonScan) value(sch *fieldSchema) string {
	s.ws()
	switch s.b[s.i] {
	case '{':
		return s.object(sch)
	case '[':
		s.i++
		var e *fieldSchema
		if sch != nil {
			e = sch.elem
		}
		for n := 0; ; n++ {
			s.ws()
			if s.b[s.i] == ']' {
				s.i++
				return ""
			}
			s.path = append(s.path, pathStep{n: n})
			if msg := s.value(e); msg != "" {
				return msg
			}
			s.path = s.path[:len(s.path)-1]
			s.ws()
			if s.b[s.i] == ',' {
				s.i++
			}
		}
	case '"':
		s.str()
	default: // a number, true, false or null
		for s.i < len(s.b) && !strings.ContainsRune(",]} \t\n\r", rune(s.b[s.i])) {
			s.i++
		}
	}
	return ""
}

func (s *jsonScan) object(sch *fieldSchema) string {
	s.i++
	var seen uint64
	var names map[string]bool // a map's names seen
	for {
		s.ws()
		if s.b[s.i] == '}' {
			s.i++
			return ""
		}
		name := s.str()
		s.ws()
		s.i++ // ':'
		var next *fieldSchema
		step := ""
		switch {
		case sch == nil:
		case sch.isMap: // its names are the plan's own
			if names == nil {
				names = map[string]bool{}
			}
			if names[string(name)] {
				return fmt.Sprintf("%sname %q is given twice", s.at(), name)
			}
			names[string(name)] = true
			next, step = sch.elem, string(name)
		case sch.fields == nil: // an array's schema where an object stands: json.Unmarshal refused it already
			next = nil
		default:
			f, ok := sch.fields[string(name)]
			if !ok {
				for field := range sch.fields {
					if strings.EqualFold(field, string(name)) {
						return fmt.Sprintf("%sfield %q is not %q (JSON names are case-sensitive: SPEC §3 gives them exactly)", s.at(), name, field)
					}
				}
				break // a name no field has: let by
			}
			if seen&(1<<f.i) != 0 {
				return fmt.Sprintf("%sfield %q is given twice", s.at(), name)
			}
			seen |= 1 << f.i
			next, step = f.sch, f.name // the schema's string: no copy of name made
		}
		if next == nil {
			s.value(nil) // skipped: nothing in it is checked
		} else {
			s.path = append(s.path, pathStep{name: step})
			if msg := s.value(next); msg != "" {
				return msg
			}
			s.path = s.path[:len(s.path)-1]
		}
		s.ws()
		if s.b[s.i] == ',' {
			s.i++
		}
	}
}

// at is where the scan stands as a reason's prefix: "" at the top, else
// e.g. "provisioning.files[3].on_change: ".
func (s *jsonScan) at() string {
	var b strings.Builder
	for _, p := range s.path {
		switch {
		case p.name == "":
			fmt.Fprintf(&b, "[%d]", p.n)
		case b.Len() > 0:
			b.WriteString("." + p.name)
		default:
			b.WriteString(p.name)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + ": "
}
