package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestTourSaysHowToGetNatsAndWhatTheSweepExits: the hints the lab prints
// are followed by someone who may have read nothing else: they say how to
// get the nats CLI they use, and that the sweep they give (--stood-after
// 1s, so the waiting need stood asked) exits 1 on purpose, which `go run`
// reports as "exit status 1".
func TestTourSaysHowToGetNatsAndWhatTheSweepExits(t *testing.T) {
	dir := t.TempDir()
	s := &natsBus{Server: bustest.Start(t), credsDir: filepath.Join(dir, "creds")}
	l := &layout{dir: dir, sockets: dir, nodes: []string{"ace", "g14"}}
	var out strings.Builder
	tour(&out, s, l)
	for _, want := range []string{
		"(the nats CLI: go install github.com/nats-io/natscli/nats@v0.5.0)",
		"go run ./cmd/mesh-provisioner sweep --nats " + s.ClientURL() + " --creds " + filepath.Join(dir, "creds", "mesh-operator.creds") + " --stood-after 1s\n",
		"exits 1 (go run says \"exit status 1\"): grafana's need has waited over 1s, so it stood asked",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tour lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTourAndREADMEInstallOneNatsCLI: the tour's go install of the nats
// CLI is the README's, so the two never name different versions.
func TestTourAndREADMEInstallOneNatsCLI(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "go install github.com/nats-io/natscli/nats@" + natsCLI + "`"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
