package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// evilText drives a terminal printed raw: an OSC setting the title, a CSI
// clearing the screen, a CR and a line break forging a line, a bidi
// override, a C1 CSI, a BEL.
const evilText = "\x1b]0;owned\x07\x1b[2J\r\nFAKE applied\u202e\u009b31m\x07"

// rawRunes are the runes of evilText no operator's terminal may get raw.
var rawRunes = []string{"\x1b", "\r", "\u202e", "\u009b", "\x07"}

func holdsRaw(text string) []string {
	var out []string
	for _, r := range rawRunes {
		if strings.Contains(text, r) {
			out = append(out, fmt.Sprintf("%q", r))
		}
	}
	return out
}

// consoleLog makes the client log as --log-format console does, to buf.
func consoleLog(buf *bustest.Buffer) clientOpt {
	return func(c *Config) {
		l, err := cli.Logger(buf, "console", "debug", "mesh-provisioner-client")
		if err != nil {
			panic(err)
		}
		c.Log = l
	}
}

// A provider refusing a binding and the vault refusing a secret each give
// a reason of their own making: 200 KB of it, holding a terminal's escape
// sequences and a line break. The two modules fail with it; the report
// holds it cut to report.MaxText; the operator's `status` and `graph
// explain` text, and the console log, show it escaped (no raw ESC, CR,
// bidi override, C1 CSI or BEL: a remote party does not drive the
// operator's terminal); the node's other module fills.
func TestAHostileProvidersAndVaultsReasonNeverReachesTheOperatorsTerminalRaw(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.boundConsumer()
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/k", Template: "k"}},
		Secrets: []nodes.SecretSpec{{Name: "api"}},
	}, map[string]string{"k": "k = ${secret:api}\n"})
	big := evilText + strings.Repeat("x", 200_000) + evilText
	m.rawVault(func(*[32]byte) []byte {
		b, _ := json.Marshal(map[string]string{"status": "refused", "reason": big})
		return b
	})
	kv := m.bucket("gitea_bound")
	entry, _ := json.Marshal(map[string]any{"state": "refused", "reason": big})
	if _, err := kv.Put(t.Context(), "ace.cc.gitea-read", entry); err != nil {
		t.Fatal(err)
	}
	var logs bustest.Buffer
	sock := ctlSock(t)
	m.client("ace", withControl(sock), consoleLog(&logs))
	m.waitState("ace", "web", "applied")
	for _, mod := range []string{"cc", "app"} {
		r := m.waitState("ace", mod, "failed")
		if why := fmt.Sprint(r["reason"]); len(why) > report.MaxText+64 || !contains(why, "owned") {
			t.Errorf("%s: report reason is %d bytes (want at most about %d, saying the reason)", mod, len(why), report.MaxText)
		}
		_, text := explainOf(t, sock, mod)
		if raw := holdsRaw(text); raw != nil {
			t.Errorf("graph explain %s prints %v raw:\n%.600q", mod, raw, text)
		}
		if !contains(text, `\x1b]0;owned`) {
			t.Errorf("graph explain %s does not show the reason escaped:\n%.600s", mod, text)
		}
	}
	_, b := ctlGet(t, sock, "/v1/modules")
	var mods control.Modules
	if err := json.Unmarshal(b, &mods); err != nil {
		t.Fatal(err)
	}
	var status bytes.Buffer
	if err := control.WriteStatus(&status, &mods); err != nil {
		t.Fatal(err)
	}
	if raw := holdsRaw(status.String()); raw != nil {
		t.Errorf("status prints %v raw:\n%.600q", raw, status.String())
	}
	time.Sleep(200 * time.Millisecond) // the log lines of the failures are written by now
	if raw := holdsRaw(logs.String()); raw != nil {
		t.Errorf("the console log holds %v raw:\n%.2000q", raw, logs.String())
	}
	if n := len(logs.String()); n > 64<<10 {
		t.Errorf("the console log is %d bytes for two refusals: a remote party's reason is logged whole", n)
	}
}

// A provider's refusal reaches every placeholder that reads the binding:
// a template naming a hundred keys of it, and a reason of 200 KB, made
// `graph explain` answer the reason at each of them, 40 MB for one module
// (a thousand keys and 1 MB, gigabytes: the client built the answer in
// memory and was killed for it, every module of the node with it, when
// the operator asked why one module failed). Each why explain shows is
// cut, saying how long it was; the answer stays small.
func TestAProvidersLongReasonIsShownCutAtEachPlaceholderThatReadsIt(t *testing.T) {
	m := newMesh(t)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	var tmpl strings.Builder
	for i := range 100 {
		fmt.Fprintf(&tmpl, "k%d = ${bound:gitea-read:k%d}\n", i, i)
	}
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/a.toml", Template: "t"}, {Path: "/etc/cc/b.toml", Template: "t"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"t": tmpl.String()})
	reason := "gitea will not: " + strings.Repeat("a long story. ", 200_000/14)
	entry, _ := json.Marshal(map[string]any{"state": "refused", "reason": reason})
	if _, err := m.bucket("gitea_bound").Put(t.Context(), "ace.cc.gitea-read", entry); err != nil {
		t.Fatal(err)
	}
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "cc", "failed")
	_, b := ctlGet(t, sock, "/v1/explain?module=cc")
	if len(b) > 2<<20 {
		t.Fatalf("explain of cc is %d bytes: the provider's reason is shown whole at each placeholder", len(b))
	}
	_, text := explainOf(t, sock, "cc")
	if !contains(text, "gitea will not: a long story.") || !contains(text, fmt.Sprintf("(cut: %d bytes in all)", len("gitea_bound ace.cc.gitea-read: refused by the provider: ")+len(reason))) {
		t.Errorf("explain does not show the reason's beginning and how long it was:\n%.3000q", text)
	}
}
