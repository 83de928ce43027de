package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAServerRefusedTheReadOfABucketItMayLookUpSaysSoAtOnce: a server
// whose bus user may look the needs bucket up (its stream's info) but not
// read its keys (the consumer a read makes is refused: rights narrowed by
// mistake) is told so as soon as the bus refuses the read: the verb's
// needs answer is "not permitted to read mesh-provisioner_needs", naming
// the request the bus refused, and a sweep names the bucket in
// unreadable_buckets. Before, the read waited for its whole context (35
// s) and the verb's answer, when it came, could not say which request was
// refused.
func TestAServerRefusedTheReadOfABucketItMayLookUpSaysSoAtOnce(t *testing.T) {
	srv, err := spec.RightsOf(spec.RoleServer, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	needs := "KV_" + spec.NeedsBucket
	narrowed := false
	for i, r := range srv.Publish {
		if !slices.Contains(r.Subjects, "$JS.API.*.*."+needs) {
			continue
		}
		// Everything on the stream but making a consumer: it may be looked
		// up, made, purged, read key by key, but not watched.
		srv.Publish[i] = spec.Rule{Subjects: []string{
			"$JS.API.STREAM.INFO." + needs, "$JS.API.STREAM.CREATE." + needs, "$JS.API.STREAM.UPDATE." + needs,
			"$JS.API.STREAM.PURGE." + needs, "$JS.API.DIRECT.GET." + needs + ".>", "$JS.FC." + needs + ".>"}}
		narrowed = true
	}
	if !narrowed {
		t.Fatal("the server's rights name no rule of the needs bucket's stream")
	}
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

	r, _ := ask(t, nc, map[string]any{"what": "needs"})
	for _, want := range []string{"not permitted to read " + spec.NeedsBucket, `"$JS.API.CONSUMER.CREATE.` + needs} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the needs answer says %q, want it to say %q", r.Error, want)
		}
	}

	// Within the 35 s a read the bus refused waited before: a sweep's
	// reply names the bucket.
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer acancel()
	sw, err := AskSweep(actx, nc, "", "", "")
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if got := strings.Join(sw.UnreadableBuckets, ","); got != spec.NeedsBucket {
		t.Errorf("unreadable_buckets %q, want %s", got, spec.NeedsBucket)
	}
}
