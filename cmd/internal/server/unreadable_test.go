package server

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAServerNotPermittedToReadTheAssignmentsStillSweeps: a server whose
// bus user may not read mesh-controller_assignments (rights made before
// SPEC r2's sweep: the controller grants a module the buckets its
// manifest reads) answers the sweep within seconds, judging the needs it
// reads and naming the bucket in unreadable_buckets, and the text says it
// may not read it, as soon as the bus refuses the lookup; before, every sweep (and every /metrics scrape) waited
// 35 s for a lookup the bus had refused and failed with "opening bucket
// mesh-controller_assignments: context deadline exceeded", and the
// command, whose request gave up first, said no more than a timeout.
func TestAServerNotPermittedToReadTheAssignmentsStillSweeps(t *testing.T) {
	s, srvCreds, nc, js := assignmentsUnreadable(t)
	as := assignmentsKV(t, js)
	put(t, as, "ace.web", `{"provisioning":{}}`)
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "web", "config", "port", "failed", "mesh-config_resolved ace.web.port: not a number")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), Creds: srvCreds, Log: zerolog.New(&bustest.Buffer{})})
	}()
	t.Cleanup(func() { cancel(); <-done })
	bustest.Eventually(t, 10*time.Second, func() error {
		_, err := nc.Request(spec.QuerySubject, []byte(`{}`), time.Second)
		return err
	})

	// Answered as soon as the bus refuses the lookup (bus.LookupKV), not
	// after its 5 s timeout: each of two sweeps (the second looks the
	// bucket up again) has a 3 s deadline that must not expire.
	var r SweepReply
	for i := range 2 {
		actx, acancel := context.WithTimeout(context.Background(), 3*time.Second)
		var err error
		r, err = AskSweep(actx, nc, "", "", "")
		expired := actx.Err()
		acancel()
		if err != nil || expired != nil {
			t.Fatalf("sweep %d with a 3 s deadline: %v (deadline: %v)", i+1, err, expired)
		}
		if got := strings.Join(r.UnreadableBuckets, ","); got != spec.AssignmentsBucket {
			t.Errorf("sweep %d: unreadable_buckets %q, want %s", i+1, got, spec.AssignmentsBucket)
		}
		if r.Summary.Needs.Failed != 1 || len(r.Findings) != 1 || r.Findings[0].Name != "port" || !r.Held() {
			t.Errorf("sweep %d: the failed need is not judged: summary %+v findings %+v", i+1, r.Summary, r.Findings)
		}
	}
	actx, acancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer acancel()
	var text bytes.Buffer
	WriteSweep(&text, r)
	if !strings.Contains(text.String(), "not permitted to read "+spec.AssignmentsBucket) {
		t.Errorf("the text does not say the server may not read the assignments:\n%s", text.String())
	}
	// The verb's own answers of its buckets are unaffected.
	if _, err := AskFailedModules(actx, nc, "", ""); err != nil {
		t.Errorf("what applied: %v", err)
	}
}

// assignmentsUnreadable is a bus on which the server's user may not read
// mesh-controller_assignments (its rights without that bucket's
// subjects), with the buckets made by the lab's user: the bus, the
// server's creds and a JetStream of the lab's user.
func assignmentsUnreadable(t *testing.T) (*natsd.Server, string, *nats.Conn, jetstream.JetStream) {
	t.Helper()
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
	if len(pub) == len(srv.Publish) {
		t.Fatal("the server's rights name no subject of the assignments bucket")
	}
	srv.Publish = pub
	lab, err := spec.RightsOf(spec.RoleLab, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, creds := authtest.Bus(t, []spec.Rights{srv, lab})
	nc, js := bustest.JetStream(t, s, nats.UserCredentials(creds[lab.User]))
	ensure(t, js)
	return s, creds[srv.User], nc, js
}
