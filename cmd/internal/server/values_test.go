package server

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// valueCase is one key of the needs, applied or collect bucket and its
// value: in shape (why empty) or out of shape, with a part of the why.
type valueCase struct {
	what, key, value, why string
}

// valueCases are values that agree with their keys and values that do not
// (SPEC §4.4, §5.2, §5.3): each field that repeats a key's token, a field
// missing, a field of the wrong type, a value that is no JSON object.
var valueCases = []valueCase{
	{"needs", "ace.web.config.k", needJSON("ace", "web", "config", "k", "met", ""), ""},
	{"needs", "ace.web.bound.gitea-read=3Aurl", needJSON("ace", "web", "bound", "gitea-read:url", "met", ""), ""},
	{"needs", "ace.web.config.node", needJSON("g14", "web", "config", "node", "failed", "x"), `value says node "g14", key says "ace"`},
	{"needs", "ace.web.config.module", needJSON("ace", "other", "config", "module", "failed", "x"), `value says module "other", key says "web"`},
	{"needs", "ace.web.config.kind", needJSON("ace", "web", "secret", "kind", "failed", "x"), `value says kind "secret", key says "config"`},
	{"needs", "ace.web.config.name", needJSON("ace", "web", "config", "z", "failed", "x"), `value says name "z", key says "name"`},
	{"needs", "ace.web.bound.gitea-read=3Aas", needJSON("ace", "web", "bound", "gitea-read=3Aas", "failed", "x"), `value says name "gitea-read=3Aas", key says "gitea-read:as"`},
	{"needs", "ace.web.config.all", needJSON("g14", "other", "secret", "z", "failed", "x"), `value says node "g14", key says "ace"; value says module "other", key says "web"`},
	{"needs", "ace.web.config.long", needJSON("ace", strings.Repeat("m", 10000), "config", "long", "failed", "x"), `value says module "mmmmmmmm`},
	// A field that repeats the key left out (or null) says the key's.
	{"needs", "ace.web.config.nonode", `{"module":"web","kind":"config","name":"nonode","state":"met"}`, ""},
	{"needs", "ace.web.config.nullmodule", `{"node":"ace","module":null,"kind":"config","name":"nullmodule","state":"met"}`, ""},
	{"needs", "ace.web.config.num", `{"node":"ace","module":"web","kind":"config","name":5,"state":"failed"}`, `value's name is a number, not a string`},
	{"needs", "ace.web.config.list", `["ace","web"]`, `value is an array, not an object`},
	{"needs", "ace.web.config.null", `null`, `value is null, not an object`},
	{"applied", "ace.web", `{"node":"ace","module":"web","state":"applied","at":"2026-01-01T00:00:00Z","files":[]}`, ""},
	{"applied", "ace.zsh", `{"node":"g14","module":"web","state":"applied"}`, `value says node "g14", key says "ace"; value says module "web", key says "zsh"`},
	{"applied", "ace.nomod", `{"state":"applied"}`, ""},
	{"applied", "ace.files", `{"node":"ace","module":"files","state":"failed","files":[{"path":7}]}`, `value's files.path is a number, not a string`},
	{"applied", "ace.text", `applied`, `value does not parse`},
	{"collect", "ace.shell=3Azsh.zsh", `{"collection":"shell:zsh","contributor":"zsh","item":"x\n"}`, ""},
	{"collect", "ace.environment.zsh", `{"collection":"env","contributor":"web","item":"x"}`, `value says collection "env", key says "environment"; value says contributor "web", key says "zsh"`},
	{"collect", "ace.hosts.web", `{"collection":"hosts","contributor":"web","item":5}`, `value's item is a number, not a string`},
	{"collect", "ace.hosts.zsh", `{"collection":"hosts","contributor":"zsh"}`, `value has no item`},
}

// maxWhy bounds a why, whatever the value quoted in it holds.
const maxWhy = 300

// plantValues writes valueCases, with the registry and every module
// assigned (so that no key is an orphan).
func plantValues(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ensureRegistered(t, js)
	as := assignmentsKV(t, js)
	for _, m := range []string{"web", "zsh", "nomod", "files", "text"} {
		put(t, as, "ace."+m, `{"provisioning":{}}`)
	}
	for _, c := range valueCases {
		put(t, bucket(t, js, shapes[c.what].bucket), c.key, c.value)
	}
}

func TestSweepSaysValuesDisagreeingWithTheirKeysOutOfShape(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	plantValues(t, js)

	r, err := sweep(testCtx(t), js, SweepParams{StoodAfter: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	whys := map[string]string{} // bucket key → why
	for _, f := range r.reply.Findings {
		if f.Verdict != VerdictOutOfShape {
			t.Errorf("a value out of shape was judged: %s", line(f))
			continue
		}
		whys[f.Bucket+" "+f.Key] = f.Why
	}
	oos := 0
	for _, c := range valueCases {
		k := shapes[c.what].bucket + " " + c.key
		why, found := whys[k]
		switch {
		case c.why == "" && found:
			t.Errorf("%s agrees with its key, said out of shape: %s", k, why)
		case c.why != "" && !found:
			t.Errorf("%s (%s) not said out of shape", k, c.why)
		case c.why != "" && !strings.Contains(why, c.why):
			t.Errorf("%s: why %q, want it to say %q", k, why, c.why)
		case len(why) > maxWhy:
			t.Errorf("%s: why of %d bytes, want at most %d", k, len(why), maxWhy)
		}
		if c.why != "" {
			oos++
		}
	}
	sum := r.reply.Summary
	// The three modules whose report is out of shape are modules all the
	// same (assigned, and their client wrote): counted, not judged.
	want := Summary{Modules: 5, Applied: 2, ReportOutOfShape: 3, Needs: NeedCounts{Met: 4}, OutOfShape: oos}
	if sum != want {
		t.Errorf("summary %+v\n   want %+v", sum, want)
	}
	if len(r.reply.Orphans) != 0 {
		t.Errorf("orphans %v", r.reply.Orphans)
	}
	if n := r.needs[needLabels{verdict: "out_of_shape", kind: "config", owner: ownerClient}]; n != 9 {
		t.Errorf("out-of-shape config needs counted for the metrics: %d, want 9", n)
	}
}

func TestVerbSaysValuesDisagreeingWithTheirKeysOutOfShape(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	plantValues(t, js)
	serveQuery(t, nc, js)

	for _, what := range []string{"needs", "applied", "collect"} {
		t.Run(what, func(t *testing.T) {
			r, _ := ask(t, nc, map[string]any{"what": what})
			if r.Error != "" {
				t.Fatalf("error: %s", r.Error)
			}
			var wantEntries, wantOOS []string
			wantWhy := map[string]string{}
			for _, c := range valueCases {
				if c.what != what {
					continue
				}
				if c.why == "" {
					wantEntries = append(wantEntries, c.key)
				} else {
					wantOOS = append(wantOOS, c.key)
					wantWhy[c.key] = c.why
				}
			}
			sort.Strings(wantEntries)
			sort.Strings(wantOOS)
			entries, oos := keysOf(t, r)
			if fmtKeys(entries) != fmtKeys(wantEntries) {
				t.Errorf("entries %s\n   want %s", fmtKeys(entries), fmtKeys(wantEntries))
			}
			if fmtKeys(oos) != fmtKeys(wantOOS) {
				t.Errorf("out_of_shape %s\n   want %s", fmtKeys(oos), fmtKeys(wantOOS))
			}
			for _, o := range r.OutOfShape {
				if !strings.Contains(o.Why, wantWhy[o.Key]) || len(o.Why) > maxWhy {
					t.Errorf("%s: why %q, want it to say %q in at most %d bytes", o.Key, o.Why, wantWhy[o.Key], maxWhy)
				}
			}
		})
	}
	// Narrowed, a disagreeing value is still said.
	r, _ := ask(t, nc, map[string]any{"what": "needs", "node": "ace", "module": "web"})
	if _, oos := keysOf(t, r); len(oos) != 10 {
		t.Errorf("needs of ace/web: %d out of shape, want 10: %s", len(oos), fmtKeys(oos))
	}
}
