package control

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// text is what write prints.
func text(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var at = time.Date(2026, 12, 1, 12, 7, 23, 0, time.Local)

func TestStatusIsOneAlignedLinePerModuleAndACount(t *testing.T) {
	m := &Modules{Node: "ace", At: at, Modules: []ModuleStatus{
		{Module: "long-module-name", State: "waiting", Files: 2, Since: at.Add(-4*time.Minute - 12*time.Second),
			Reason: "mesh-config_resolved ace.long-module-name.flavour: not written yet\nand more"},
		{Module: "web", State: "applied", Files: 1, FilesMet: 1, Since: at.Add(-time.Hour)},
	}}
	b := text(t, func(w io.Writer) error { return WriteStatus(w, m) })
	want := "MODULE            STATE    FILES  SINCE              REASON\n" +
		"long-module-name  waiting  0/2    12:03:11 (4m12s)   mesh-config_resolved ace.long-module-name.flavour: not written yet and more\n" +
		"web               applied  1/1    11:07:23 (1h0m0s)\n" +
		"\n2 modules on node ace: 1 applied, 1 waiting.\n"
	if b != want {
		t.Fatalf("status:\n%s\nwant:\n%s", b, want)
	}
}

// A client not ready says why under its count: "0 modules" of a client
// that has not reached the bus says nothing of the node.
func TestStatusOfAClientNotReadySaysWhy(t *testing.T) {
	m := &Modules{Node: "n9", At: at, NotReady: []string{"the bus is not connected", "the initial load is not done"}}
	b := text(t, func(w io.Writer) error { return WriteStatus(w, m) })
	want := "MODULE  STATE  FILES  SINCE  REASON\n" +
		"\n0 modules on node n9.\n" +
		"Not ready: the bus is not connected; the initial load is not done.\n"
	if b != want {
		t.Fatalf("status:\n%s\nwant:\n%s", b, want)
	}
}

// Modules taken off whose files the node-engine has not removed yet are
// said after the count: "0 modules" alone read as a clean node.
func TestStatusSaysTheModulesWhoseRemovalWaits(t *testing.T) {
	m := &Modules{Node: "n9", At: at, Removing: []string{"api", "db"}}
	b := text(t, func(w io.Writer) error { return WriteStatus(w, m) })
	want := "MODULE  STATE  FILES  SINCE  REASON\n" +
		"\n0 modules on node n9.\n" +
		"Taken off, files not removed yet (the node-engine has not answered; tried again at each tick): api, db.\n"
	if b != want {
		t.Fatalf("status:\n%s\nwant:\n%s", b, want)
	}
}

func TestExplanationNamesEachOutputAndTheChainDownToTheRoot(t *testing.T) {
	since := at.Add(-4 * time.Minute)
	e := &Explanation{Node: "ace", Module: "web", State: "waiting", Since: since, At: at, Outputs: []Output{
		{Kind: "file", Path: "/etc/web/a.conf", State: "waiting", Since: since, Chain: []Step{
			{Kind: "need", Placeholder: "${config:flavour}", State: "waiting", Inputs: []Step{
				{Kind: "config", Bucket: "mesh-config_resolved", Key: "ace.web.flavour", Where: "mesh-config_resolved ace.web.flavour",
					State: "waiting", Why: "not written yet", Root: true, Input: true, Since: since},
			}},
			// a met config need is an input of the graph, with nothing below it
			{Kind: "need", Placeholder: "${config:model}", Where: "mesh-config_resolved ace.web.model", State: "met", Input: true, Since: since},
		}},
		{Kind: "secret-file", Path: "/etc/web/tok", Secret: "tok", State: "waiting", Since: since, Chain: []Step{
			{Kind: "vault", Vault: "own/web/tok", Where: "vault own/web/tok", State: "waiting", Input: true, Root: true,
				Why: "no answer within 300ms", Secret: true, Since: since, Asked: at.Add(-time.Minute)},
		}},
		{Kind: "item", Collection: "shell:zsh:normal", State: "met"},
	}}
	b := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
	want := "web on ace: waiting since 12:03:23 (4m0s)\n" +
		"  /etc/web/a.conf        waiting\n" +
		"    ${config:flavour}    waiting\n" +
		"      mesh-config_resolved ace.web.flavour: not written yet (watched since 12:03:23)\n" +
		"    ${config:model}      met\n" +
		"  /etc/web/tok           waiting (secret tok)\n" +
		"    vault own/web/tok: no answer within 300ms (since 12:03:23, last asked 12:06:23)\n" +
		"  item shell:zsh:normal  met\n"
	if b != want {
		t.Fatalf("explain:\n%s\nwant:\n%s", b, want)
	}
}

func TestAFillFailureIsSaidOnceWithItsSocket(t *testing.T) {
	e := &Explanation{Node: "bee", Module: "down", State: "failed", Since: at, At: at,
		Fill:    &FillFailure{Socket: "/run/fill.sock", Why: "fill socket /run/fill.sock: not answering: connection refused", Since: at},
		Outputs: []Output{{Kind: "file", Path: "/etc/down/a.conf", State: "met"}}}
	got := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
	if strings.Count(got, "/run/fill.sock") != 1 ||
		!strings.Contains(got, "  fill socket /run/fill.sock: not answering: connection refused (since 12:07:23)\n") {
		t.Fatalf("explain:\n%s", got)
	}
}

// A bucket the bus does not let the client read is not watched: its root
// says since when it was refused, not "watched since" (SPEC §4.6: "not
// permitted to read" is not "not written yet").
func TestARootTheBusRefusesIsNotSaidWatched(t *testing.T) {
	since := at.Add(-time.Minute)
	e := &Explanation{Node: "ace", Module: "web", State: "waiting", Since: since, At: at, Outputs: []Output{
		{Kind: "file", Path: "/etc/web/a.conf", State: "waiting", Since: since, Chain: []Step{
			{Kind: "need", Placeholder: "${bound:svc:url}", State: "waiting", Inputs: []Step{
				{Kind: "bound", Bucket: "other_bound", Key: "ace.web.svc", Where: "other_bound ace.web.svc",
					State: "waiting", Why: "not permitted to read other_bound", Root: true, Input: true, Since: since},
			}},
		}},
	}}
	b := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
	if !strings.Contains(b, "      other_bound ace.web.svc: not permitted to read other_bound (since 12:06:23)\n") {
		t.Fatalf("explain:\n%s", b)
	}
}

// A templates archive not there yet says when its fetch was last tried, as
// a vault name says when it was last asked: as a file's input, and as the
// module's own output when it has no file.
func TestAnArchiveNotThereYetSaysWhenItWasLastTried(t *testing.T) {
	since, tried := at.Add(-time.Minute), at.Add(-2*time.Second)
	why := "templates archive obj://t/web.tar: not there yet: nats: object not found"
	step := Step{Kind: "archive", Where: "templates archive obj://t/web.tar", State: "waiting", Why: why,
		Root: true, Input: true, Since: since, Asked: tried}
	for _, e := range []*Explanation{
		{Node: "ace", Module: "web", State: "waiting", Since: since, At: at, Outputs: []Output{
			{Kind: "file", Path: "/etc/web/a.conf", State: "waiting", Since: since, Chain: []Step{step}}}},
		{Node: "ace", Module: "web", State: "waiting", Since: since, At: at, Outputs: []Output{
			{Kind: "archive", Where: step.Where, State: "waiting", Since: since, Why: why, Root: true, Asked: tried}}},
	} {
		b := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
		if !strings.Contains(b, why+" (since 12:06:23, last tried 12:07:21)\n") {
			t.Fatalf("explain:\n%s", b)
		}
	}
}

// "watched since" is for an input not written yet; one that is there — a
// bound entry the provider refused, one written but not bound yet, a
// provider's plan that is refused — says "since" (SPEC §5.5's example
// words a missing entry "not written yet (watched since …)").
func TestARootThatIsThereIsNotSaidWatched(t *testing.T) {
	since := at.Add(-time.Minute)
	leaf := func(state, why string) Step {
		return Step{Kind: "bound", Bucket: "gitea_bound", Key: "ace.web.gitea-read", Where: "gitea_bound ace.web.gitea-read",
			State: state, Why: why, Root: true, Input: true, Since: since}
	}
	for _, c := range []struct {
		step Step
		want string
	}{
		{leaf("failed", "gitea_bound ace.web.gitea-read: refused by the provider: no seats left"),
			"gitea_bound ace.web.gitea-read: refused by the provider: no seats left (since 12:06:23)\n"},
		{leaf("waiting", `gitea_bound ace.web.gitea-read: state "pending", not bound yet`),
			`gitea_bound ace.web.gitea-read: state "pending", not bound yet (since 12:06:23)` + "\n"},
		{Step{Kind: "plan", Bucket: "mesh-controller_assignments", Key: "forge.gitea", Where: "mesh-controller_assignments forge.gitea",
			State: "waiting", Why: "provider gitea's plan (mesh-controller_assignments forge.gitea) is refused: not JSON",
			Root: true, Input: true, Since: since},
			"provider gitea's plan (mesh-controller_assignments forge.gitea) is refused: not JSON (since 12:06:23)\n"},
		{leaf("waiting", "gitea_bound ace.web.gitea-read: not written yet"),
			"gitea_bound ace.web.gitea-read: not written yet (watched since 12:06:23)\n"},
	} {
		e := &Explanation{Node: "ace", Module: "web", State: c.step.State, Since: since, At: at, Outputs: []Output{
			{Kind: "file", Path: "/etc/web/a.conf", State: c.step.State, Since: since, Chain: []Step{
				{Kind: "need", Placeholder: "${bound:gitea-read:url}", State: c.step.State, Inputs: []Step{c.step}},
			}},
		}}
		b := text(t, func(w io.Writer) error { return WriteExplanation(w, e) })
		if !strings.Contains(b, "      "+c.want) {
			t.Errorf("explain:\n%s\nwant the line:\n      %s", b, c.want)
		}
	}
}
