package control

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// What `mesh-provisioner-client status` and `graph explain` print for
// people; the JSON they render is the control socket's. Every text from
// the answer is printed through Escape.

// WriteStatus writes one line per module, in aligned columns, like
// `systemctl list-units`, a count at the end, and why the client is not
// ready when it is not.
func WriteStatus(w io.Writer, m *Modules) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tSTATE\tFILES\tSINCE\tREASON")
	counts := map[string]int{}
	for _, s := range m.Modules {
		counts[s.State]++
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\n", Escape(s.Module), Escape(s.State), s.FilesMet, s.Files,
			sinceText(s.Since, m.At), Escape(oneLine(s.Reason)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			fmt.Fprintln(w, strings.TrimRight(l, " \n"))
		}
	}
	var parts []string
	for _, st := range []string{"applied", "waiting", "failed"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	noun := "modules"
	if len(m.Modules) == 1 {
		noun = "module"
	}
	summary := ""
	if len(parts) > 0 {
		summary = ": " + strings.Join(parts, ", ")
	}
	if _, err := fmt.Fprintf(w, "\n%d %s on node %s%s.\n", len(m.Modules), noun, Escape(m.Node), summary); err != nil {
		return err
	}
	if len(m.Removing) > 0 {
		if _, err := fmt.Fprintf(w, "Taken off, files not removed yet (the node-engine has not answered; tried again at each tick): %s.\n",
			Escape(strings.Join(m.Removing, ", "))); err != nil {
			return err
		}
	}
	if len(m.NotReady) > 0 { // "0 modules" of a client that has read nothing yet says nothing of the node
		_, err := fmt.Fprintf(w, "Not ready: %s.\n", Escape(strings.Join(m.NotReady, "; ")))
		return err
	}
	return nil
}

// WriteExplanation writes e the way SPEC §5.5's example shows it: the
// module, then each output with its state and, for one not met, every
// placeholder it names and the chain down to the input at the root.
func WriteExplanation(w io.Writer, e *Explanation) error {
	var rows []row
	add := func(indent int, label, state string) {
		rows = append(rows, row{indent, Escape(label), Escape(state), false})
	}
	line := func(indent int, text string) { rows = append(rows, row{indent, Escape(text), "", true}) }

	unexplained := e.State != "applied"
	for _, o := range e.Outputs {
		if o.State != "met" {
			unexplained = false
		}
	}
	if e.Fill != nil {
		why := e.Fill.Why
		if rest := strings.TrimPrefix(why, "fill socket: "); strings.Contains(rest, e.Fill.Socket) {
			why = rest
		} else if !strings.Contains(why, e.Fill.Socket) {
			why = "fill socket " + e.Fill.Socket + ": " + why
		}
		line(2, why+" (since "+clock(e.Fill.Since, e.At)+")")
	} else if unexplained && e.Reason != "" {
		line(2, e.Reason)
	}
	for _, o := range e.Outputs {
		label, state := o.Path, o.State
		switch o.Kind {
		case "item":
			label = "item " + o.Collection
		case "secret-file":
			if o.Asked.IsZero() {
				state += " (secret " + o.Secret + ")"
			} else {
				state += " (secret " + o.Secret + ", asked " + clock(o.Asked, e.At) + ")"
			}
		case "plan", "archive":
			label = o.Where
		case "secret":
			label = "secret " + o.Secret
		}
		add(2, label, state)
		if o.Root && o.Why != "" {
			if o.Kind == "archive" && !o.Asked.IsZero() {
				line(4, o.Why+" (since "+clock(o.Since, e.At)+", last tried "+clock(o.Asked, e.At)+")")
			} else {
				line(4, o.Why+" (since "+clock(o.Since, e.At)+")")
			}
		}
		for _, s := range o.Chain {
			stepRows(s, 4, e.At, add, line)
		}
	}

	fmt.Fprintf(w, "%s on %s: %s since %s\n", Escape(e.Module), Escape(e.Node), Escape(e.State), sinceText(e.Since, e.At))
	col := 0
	for _, r := range rows {
		if n := r.indent + utf8.RuneCountInString(r.label); !r.full && n > col && n <= 60 {
			col = n
		}
	}
	for _, r := range rows {
		text := strings.Repeat(" ", r.indent) + r.label
		if !r.full {
			pad := col + 2 - utf8.RuneCountInString(text)
			text += strings.Repeat(" ", max(pad, 2)) + r.state
		}
		if _, err := fmt.Fprintln(w, text); err != nil {
			return err
		}
	}
	if len(e.NotReady) > 0 { // what it last knew: nothing moves until then
		_, err := fmt.Fprintf(w, "Not ready (%s): this is what the client last knew.\n", Escape(strings.Join(e.NotReady, "; ")))
		return err
	}
	return nil
}

type row struct {
	indent       int
	label, state string
	full         bool // a line of its own, outside the state column
}

func stepRows(s Step, indent int, at time.Time, add func(int, string, string), line func(int, string)) {
	if s.Input && len(s.Inputs) == 0 && !(s.Kind == "need" && s.State == "met") {
		// (a met config need is an input of the graph too: it stays a
		// placeholder's row, "${config:model}  met", as SPEC §5.5 shows)
		line(indent, leafText(s, at))
		return
	}
	label := s.Where
	if s.Kind == "need" {
		label = s.Placeholder
	}
	add(indent, label, s.State)
	if s.Root && s.Why != "" {
		line(indent+2, oneLine(s.Why)+" (since "+clock(s.Since, at)+")")
	}
	for _, in := range s.Inputs {
		stepRows(in, indent+2, at, add, line)
	}
}

// leafText says where an input at the root comes from, what it says, and
// since when: "gitea_bound ace.cc.gitea-read: not written yet (watched
// since 12:03:11)".
func leafText(s Step, at time.Time) string {
	why := oneLine(s.Why)
	var prefix string
	switch s.Kind {
	case "config", "bound", "plan":
		prefix = s.Bucket + " " + s.Key
	case "placement":
		prefix = s.Bucket + " " + s.Key
		if !strings.Contains(why, "placement.") {
			prefix = s.Where
		}
	case "registry":
		prefix = s.Where
		if strings.Contains(why, "kind "+s.Key) {
			prefix = ""
		}
	case "vault":
		prefix = "vault " + s.Vault
	default:
		prefix = s.Where
	}
	text := why
	if prefix != "" && !strings.Contains(why, prefix) {
		text = prefix + ": " + why
	}
	if s.State == "met" {
		text = s.Where + ": met"
	}
	switch {
	case s.Kind == "vault" && !s.Asked.IsZero():
		text += " (since " + clock(s.Since, at) + ", last asked " + clock(s.Asked, at) + ")"
	case s.Kind == "archive" && !s.Asked.IsZero():
		text += " (since " + clock(s.Since, at) + ", last tried " + clock(s.Asked, at) + ")"
	case watched(s):
		text += " (watched since " + clock(s.Since, at) + ")"
	default:
		text += " (since " + clock(s.Since, at) + ")"
	}
	return text
}

// watched is whether a bucket's input at the root is not written yet, so
// the client watches for it: "(watched since …)", SPEC §5.5's words for an
// entry not written yet. An input that is there says "(since …)": one
// failed (a bound entry the provider refused, an entry out of shape), one
// written but not bound yet, a provider's plan the client refuses, and a
// bucket the bus does not let the client read (SPEC §4.6: "not permitted to
// read" is not "not written yet").
func watched(s Step) bool {
	if s.Bucket == "" || s.State != "waiting" {
		return false
	}
	for _, there := range []string{"not permitted to read ", " not bound yet", " is refused: "} {
		if strings.Contains(s.Why, there) {
			return false
		}
	}
	return true
}

// sinceText is "12:03:11 (4m12s)": the time, and how long ago.
func sinceText(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if at.IsZero() {
		at = time.Now()
	}
	d := at.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return clock(t, at) + " (" + d.String() + ")"
}

// clock is t's time of day, with the date when it is not at's day.
func clock(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	if y, m, d := t.Date(); at.IsZero() || !sameDay(y, m, d, at.Local()) {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}

func sameDay(y int, m time.Month, d int, at time.Time) bool {
	ay, am, ad := at.Date()
	return y == ay && m == am && d == ad
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
