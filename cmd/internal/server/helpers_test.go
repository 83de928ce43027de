package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func quietLog() zerolog.Logger { return zerolog.New(io.Discard) }

func ensure(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	if err := EnsureBuckets(testCtx(t), js, 1); err != nil {
		t.Fatalf("EnsureBuckets: %v", err)
	}
}

// ensureRegistered makes the buckets and publishes the registry.
func ensureRegistered(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ensure(t, js)
	if _, _, err := PublishRegistry(testCtx(t), bucket(t, js, spec.RegistryBucket), Registry()); err != nil {
		t.Fatal(err)
	}
}

// aceWebRegistered starts a bus holding the buckets, the registry and
// ace's module web assigned an empty plan, and returns its needs bucket.
func aceWebRegistered(t *testing.T) (jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	_, js := bustest.JetStream(t, bustest.Start(t))
	ensureRegistered(t, js)
	put(t, assignmentsKV(t, js), "ace.web", `{"provisioning":{}}`)
	return js, bucket(t, js, spec.NeedsBucket)
}

func bucket(t *testing.T, js jetstream.JetStream, name string) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(testCtx(t), name)
	if err != nil {
		t.Fatalf("opening %s: %v", name, err)
	}
	return kv
}

func put(t *testing.T, kv jetstream.KeyValue, key, value string) uint64 {
	t.Helper()
	rev, err := kv.Put(testCtx(t), key, []byte(value))
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// queryReply is the verb's reply as a client reads it.
type queryReply struct {
	What       string                       `json:"what"`
	Page       int                          `json:"page"`
	Pages      int                          `json:"pages"`
	Entries    []map[string]json.RawMessage `json:"entries"`
	OutOfShape []struct {
		Key string `json:"key"`
		Why string `json:"why"`
	} `json:"out_of_shape"`
	Error string `json:"error"`
}

// askRaw sends body once and decodes the reply.
func askRaw(t *testing.T, nc *nats.Conn, body []byte) (queryReply, []byte) {
	t.Helper()
	m, err := nc.Request(spec.QuerySubject, body, 10*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	var r queryReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		t.Fatalf("reply to %s is not JSON: %v: %.200s", body, err, m.Data)
	}
	return r, m.Data
}

// ask sends req and follows the paging protocol: it asks for pages 1 …
// pages-1 and joins them. It returns the joined reply and how many pages.
func ask(t *testing.T, nc *nats.Conn, req map[string]any) (queryReply, int) {
	t.Helper()
	var all queryReply
	for page := 0; ; page++ {
		r2 := map[string]any{}
		for k, v := range req {
			r2[k] = v
		}
		if page > 0 {
			r2["page"] = page
		}
		body, _ := json.Marshal(r2)
		r, raw := askRaw(t, nc, body)
		if int64(len(raw)) > nc.MaxPayload() {
			t.Fatalf("reply of %d bytes exceeds max payload %d", len(raw), nc.MaxPayload())
		}
		if r.Error != "" {
			if page > 0 {
				t.Fatalf("page %d: error %s", page, r.Error)
			}
			return r, 1
		}
		if r.Page != page {
			t.Fatalf("asked page %d, got page %d", page, r.Page)
		}
		all.What, all.Pages = r.What, r.Pages
		all.Entries = append(all.Entries, r.Entries...)
		all.OutOfShape = append(all.OutOfShape, r.OutOfShape...)
		if page+1 >= r.Pages {
			return all, r.Pages
		}
	}
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a JSON string: %v", raw, err)
	}
	return s
}

func keysOf(t *testing.T, r queryReply) (entries, oos []string) {
	t.Helper()
	for _, e := range r.Entries {
		entries = append(entries, str(t, e["key"]))
	}
	for _, o := range r.OutOfShape {
		oos = append(oos, o.Key)
	}
	return entries, oos
}

func fmtKeys(k []string) string { return fmt.Sprintf("%q", k) }
