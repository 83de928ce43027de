package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestASweepWithARefusedBucketAnswersAtOnce: a server whose bus user may
// not read one bucket (mesh-controller_assignments) answers the sweep as
// soon as the bus refuses the lookup, with the bucket in
// unreadable_buckets and the needs it reads judged; before, each sweep
// waited out the refused lookup's whole timeout (5 s) before it could
// say the bucket refused. Asked with a 3 s deadline, which must not
// expire, twice (the second sweep looks the bucket up again).
func TestASweepWithARefusedBucketAnswersAtOnce(t *testing.T) {
	srv, err := spec.RightsOf(spec.RoleServer, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub []spec.Rule
	for _, r := range srv.Publish {
		if !strings.Contains(strings.Join(r.Subjects, " "), spec.AssignmentsBucket) {
			pub = append(pub, r)
		}
	}
	srv.Publish = pub
	lab, err := spec.RightsOf(spec.RoleLab, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, creds := authtest.Bus(t, []spec.Rights{srv, lab})
	nc, js := bustest.JetStream(t, s, nats.UserCredentials(creds[lab.User]))
	ensure(t, js)
	put(t, assignmentsKV(t, js), "ace.web", `{"provisioning":{}}`)
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "web", "config", "port", "failed", "mesh-config_resolved ace.web.port: not a number")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), Creds: creds[srv.User], Log: zerolog.New(&bustest.Buffer{})})
	}()
	t.Cleanup(func() { cancel(); <-done })
	bustest.Eventually(t, 10*time.Second, func() error {
		_, err := nc.Request(spec.QuerySubject, []byte(`{}`), time.Second)
		return err
	})

	for i := range 2 {
		actx, acancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, err := AskSweep(actx, nc, "", "", "")
		expired := actx.Err()
		acancel()
		if err != nil || expired != nil {
			t.Fatalf("sweep %d with a 3 s deadline: %v (deadline: %v)", i+1, err, expired)
		}
		if got := strings.Join(r.UnreadableBuckets, ","); got != spec.AssignmentsBucket {
			t.Errorf("sweep %d: unreadable_buckets %q, want %s", i+1, got, spec.AssignmentsBucket)
		}
		if r.Summary.Needs.Failed != 1 || len(r.Findings) != 1 || r.Findings[0].Name != "port" {
			t.Errorf("sweep %d: the failed need is not judged: summary %+v findings %+v", i+1, r.Summary, r.Findings)
		}
	}
}
