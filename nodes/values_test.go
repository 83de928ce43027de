package nodes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A templated file's value keeps the sum of its bytes; its bytes are held
// until taken, then rendered again from its node, and only while it is
// its node's value and renders to the bytes it sums.
func TestAFileValueKeepsASumAndRendersItsBytesAgain(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files: []FileSpec{{Path: "/etc/web.conf", Template: "web"}}}))
	m.SetArchive("web", digestA, map[string][]byte{"web": []byte("x=${config:a}${config:b}\n")})
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("1"))
	m.Put(spec.ConfigBucket, "ace.web.b", []byte("23"))
	m.Stabilize()
	v := file(m, "web", "/etc/web.conf").Value
	sum := sha256.Sum256([]byte("x=123\n"))
	if v == nil || !v.Held() || v.Digest() != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("value %+v: want its bytes held and summed", v)
	}
	if b, err := v.Take(); err != nil || string(b) != "x=123\n" || v.Held() {
		t.Fatalf("taken %q, %v; held after %v", b, err, v.Held())
	}
	again := m.Renders().Again.Load()
	if b, err := v.Bytes(); err != nil || string(b) != "x=123\n" || m.Renders().Again.Load() != again+1 {
		t.Fatalf("rendered again %q, %v", b, err)
	}

	// Rendered to the same bytes from other values: cut off, the value kept.
	files := m.Renders().Files.Load()
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("12"))
	m.Put(spec.ConfigBucket, "ace.web.b", []byte("3"))
	if got := m.Stabilize(); m.Renders().Files.Load() != files+1 || file(m, "web", "/etc/web.conf").Value != v {
		t.Fatalf("touched %v: an unchanged render was not cut off", got)
	}
	if b, err := v.Bytes(); err != nil || string(b) != "x=123\n" {
		t.Fatalf("rendered again after the cutoff %q, %v", b, err)
	}

	// Another value now: the old one renders nothing, and says so without
	// its bytes.
	m.Put(spec.ConfigBucket, "ace.web.b", []byte("4"))
	m.Stabilize()
	if b, err := v.Bytes(); !errors.Is(err, ErrRenderedOther) || b != nil || strings.Contains(err.Error(), "x=12") {
		t.Fatalf("the old value rendered %q, %v", b, err)
	}
	nv := file(m, "web", "/etc/web.conf").Value
	if b, err := nv.Take(); err != nil || string(b) != "x=124\n" {
		t.Fatalf("new value %q, %v", b, err)
	}
	nv.sum[0] ^= 1 // a render that does not give the bytes summed is refused
	if b, err := nv.Bytes(); !errors.Is(err, ErrRenderedOther) || b != nil || !strings.Contains(err.Error(), "/etc/web.conf") {
		t.Fatalf("a render off its sum gave %q, %v", b, err)
	}
}

// BenchmarkFileRenderedAgain is what the refill spends a file to have its
// bytes again (render, and sha256 against the value's sum): a template of
// ten placeholders, ~700 bytes.
func BenchmarkFileRenderedAgain(b *testing.B) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files: []FileSpec{{Path: "/etc/web.conf", Template: "web"}}}))
	var tpl strings.Builder
	for i := range 10 {
		fmt.Fprintf(&tpl, "# setting %d of the service, as the mesh resolved it for this node\nkey%d = ${config:k%d}\n", i, i, i)
		m.Put(spec.ConfigBucket, fmt.Sprintf("ace.web.k%d", i), []byte(strings.Repeat("v", 8)))
	}
	m.SetArchive("web", digestA, map[string][]byte{"web": []byte(tpl.String())})
	m.Stabilize()
	v := file(m, "web", "/etc/web.conf").Value
	first, _ := v.Take()
	b.ReportAllocs()
	b.SetBytes(int64(len(first)))
	for b.Loop() {
		if _, err := v.Bytes(); err != nil {
			b.Fatal(err)
		}
	}
}

// A file's value is one a file for as long as its module is: its size is
// an allocation size class, kept.
func TestAFileValueIs80Bytes(t *testing.T) {
	if s := unsafe.Sizeof(FileValue{}); s > 80 {
		t.Fatalf("FileValue is %d bytes, over its 80-byte size class", s)
	}
}
