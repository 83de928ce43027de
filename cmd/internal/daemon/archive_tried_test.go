package daemon

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The explain of a module whose templates archive is not there yet said
// the fetch's last error and since when, but not when the fetch was last
// tried, as a vault name's says when it was last asked: an operator could
// not tell a fetch tried a second ago from one stuck. It says it now, in
// the JSON (the archive's "asked", as a vault name's) and the text ("last
// tried"), and it moves as the fetch is tried again.
func TestExplainSaysWhenATemplatesArchiveNotThereYetWasLastTried(t *testing.T) {
	m := newMesh(t)
	p, _ := oneFile("late", "a\n")
	missing := "file://" + filepath.Join(m.tmpl, "late-not-uploaded.tar.gz")
	p.Templates.Ref, p.Templates.Digest = missing, "sha256:"+strings.Repeat("ab", 32)
	m.assign("ace", "late", p, nil)
	sock := ctlSock(t)
	start := time.Now()
	m.client("ace", withControl(sock))

	// The archive is each file's input (a step of its chain); with no
	// file, the module's own output (an Output of kind archive).
	archiveOf := func() (control.Step, string, error) {
		e, text, err := explainTry(sock, "late")
		if err != nil {
			return control.Step{}, "", err
		}
		for _, o := range e.Outputs {
			if o.Kind == "archive" && strings.Contains(o.Why, "not there yet") {
				return control.Step{Kind: o.Kind, Why: o.Why, Asked: o.Asked}, text, nil
			}
		}
		for _, r := range roots(e) {
			if r.Kind == "archive" && strings.Contains(r.Why, "not there yet") {
				return r, text, nil
			}
		}
		return control.Step{}, text, fmt.Errorf("no archive not there yet in:\n%s", text)
	}
	var first control.Step
	var text string
	bustest.Eventually(t, 30*time.Second, func() error {
		var err error
		if first, text, err = archiveOf(); err == nil && first.Asked.IsZero() {
			err = fmt.Errorf("the archive's last try is not said: %+v\n%s", first, text)
		}
		return err
	})
	if first.Asked.Before(start.Add(-time.Second)) {
		t.Fatalf("last tried %s, before the client started (%s)", first.Asked, start)
	}
	if !strings.Contains(text, missing) || !strings.Contains(text, ", last tried ") {
		t.Fatalf("the text does not say when the fetch was last tried:\n%s", text)
	}
	bustest.Eventually(t, 30*time.Second, func() error {
		again, _, err := archiveOf()
		if err == nil && !again.Asked.After(first.Asked) {
			err = fmt.Errorf("last tried still %s", again.Asked)
		}
		return err
	})
}
