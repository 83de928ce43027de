package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// What the real clients write for a templates archive that never came,
// as the sweep judges it (SPEC §6.2): one finding of kind "module" naming
// both nodes, stood asked, and the sweep held.
func TestTheSweepJudgesWhatRealClientsWriteForAMissingArchive(t *testing.T) {
	m := newMesh(t)
	ref, digest := m.archive("web", map[string]string{"k": "static\n"})
	if err := os.Rename(filepath.Join(m.tmpl, "web.tar.gz"), filepath.Join(m.tmpl, "later")); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"ace", "g14"} {
		p := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web-"+node+".conf", "k", "")}}
		p.Templates.Ref, p.Templates.Digest = ref, digest
		b, _ := json.Marshal(nodes.Assignment{Node: node, Module: "web", Provisioning: p})
		m.put(spec.AssignmentsBucket, node+".web", string(b))
	}
	m.client("ace")
	m.client("g14")
	stop, err := srv.ServeQuery(context.Background(), m.nc, m.js, zerolog.New(m.logs))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	bustest.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := srv.AskSweep(ctx, m.nc, "", "", "1ms")
		if err != nil {
			return err
		}
		if r.Summary.Waiting != 2 || len(r.Findings) == 0 {
			return fmt.Errorf("summary %+v findings %+v", r.Summary, r.Findings)
		}
		f := r.Findings[0]
		if f.Kind != "module" || f.Verdict != srv.VerdictStoodAsked || f.Count != 2 || !r.Held() || r.Summary.StoodModules != 2 {
			return fmt.Errorf("summary %+v findings %+v", r.Summary, r.Findings)
		}
		return nil
	})
}
