package daemon

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Bad input refused (docs/RELIABILITY.md): each bad assignment, template,
// archive or key fails its own module alone (or is ignored and logged),
// with a reason that names what is wrong; the daemon goes on, and another
// module of the node is applied and keeps following its values.

// rawArchive stores data as a templates archive and returns its file://
// ref and its digest.
func (m *mesh) rawArchive(name string, data []byte) (string, string) {
	m.t.Helper()
	p := filepath.Join(m.tmpl, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		m.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return "file://" + p, "sha256:" + hex.EncodeToString(sum[:])
}

// tarOf writes a gzipped tar of hdrs; a regular member's content is its
// name repeated to its Size.
func tarOf(hdrs ...tar.Header) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		tw.WriteHeader(&h)
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write(b)
	gz.Close()
	return buf.Bytes()
}

// gzipBomb is a few hundred KiB that inflate to more than 64 MiB of tar:
// 70 members of 1 MiB of zeros, each member's header and zeros a gzip
// stream of their own (gzip readers read concatenated streams), so it is
// cheap to build.
func gzipBomb() []byte {
	zeros := gzipOf(make([]byte, 1<<20))
	var out bytes.Buffer
	for i := range 70 {
		var hb bytes.Buffer
		tw := tar.NewWriter(&hb)
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("z%02d", i), Mode: 0o644, Size: 1 << 20, Typeflag: tar.TypeReg})
		tw.Flush()
		out.Write(gzipOf(hb.Bytes()))
		out.Write(zeros)
	}
	out.Write(gzipOf(make([]byte, 1024))) // the tar's end
	return out.Bytes()
}

// plan1 is a one-file plan reading template t.
func plan1(path string) nodes.Plan {
	return nodes.Plan{Files: []nodes.FileSpec{{Path: path, Template: "t"}},
		Placement: map[string]map[string]string{"port": {"http": "8080"}}}
}

// assignArchive assigns module a one-file plan whose templates are the
// raw archive data.
func (m *mesh) assignArchive(module string, data []byte) {
	m.t.Helper()
	p := plan1("/etc/" + module + "/f")
	p.Templates.Ref, p.Templates.Digest = m.rawArchive(module+".tar.gz", data)
	m.assign("ace", module, p, nil)
}

func TestBadInputFailsItsModuleAloneWithAClearReason(t *testing.T) {
	m := newMesh(t)
	m.webModule()

	want := map[string]string{} // module → what its reason must say
	raw := func(module, body string, says string) {
		m.put(spec.AssignmentsBucket, "ace."+module, body)
		want[module] = says
	}
	// The assignment itself.
	raw("badjson", `{"node":"ace","module":"badjson","provisioning":{"files":[`, "assignment JSON does not parse")
	raw("wrongtype", `{"node":"ace","module":"wrongtype","provisioning":{"files":[{"path":"/etc/wt","template":"t","mode":640}]}}`, "mode")
	ref, digest := m.archive("many", map[string]string{"t": "x\n"})
	var many strings.Builder
	fmt.Fprintf(&many, `{"node":"ace","module":"many","provisioning":{"templates":{"ref":%q,"digest":%q},"files":[`, ref, digest)
	for i := range nodes.MaxPlanEntries + 1 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"path":"/m/%d","template":"t"}`, i)
	}
	many.WriteString(`]}}`)
	raw("many", many.String(), "10001 files, over the limit of 10000")

	// Templates and what they render.
	m.assign("ace", "placeholders", plan1("/etc/placeholders/f"),
		map[string]string{"t": strings.Repeat("${port:http}", spec.MaxPlaceholders+1)})
	want["placeholders"] = "more than 4096 placeholders"
	m.put(spec.ConfigBucket, "ace.huge.big", strings.Repeat("b", 6000))
	m.assign("ace", "huge", plan1("/etc/huge/f"), map[string]string{"t": strings.Repeat("${config:big}", 3000)})
	want["huge"] = "over the limit of 16777216 bytes"

	// The templates archive.
	for module, c := range map[string]struct {
		data []byte
		says string
	}{
		"dotdot":   {tarOf(tar.Header{Name: "t", Size: 1, Typeflag: tar.TypeReg}, tar.Header{Name: "../evil", Size: 4, Typeflag: tar.TypeReg}), `"../evil": name holds ".."`},
		"absolute": {tarOf(tar.Header{Name: "/etc/t", Size: 1, Typeflag: tar.TypeReg}), `"/etc/t": absolute name`},
		"symlink":  {tarOf(tar.Header{Name: "t", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink}), `"t": symlink, not a regular file`},
		"hardlink": {tarOf(tar.Header{Name: "t", Linkname: "/etc/shadow", Typeflag: tar.TypeLink}), `"t": hard link, not a regular file`},
		"bomb":     {gzipBomb(), "over 64 MiB uncompressed"},
	} {
		m.assignArchive(module, c.data)
		want[module] = c.says
	}
	p := plan1("/etc/digest/f")
	p.Templates.Ref, _ = m.archive("digest", map[string]string{"t": "x\n"})
	p.Templates.Digest = "sha256:" + strings.Repeat("0", 64)
	m.assign("ace", "digest", p, nil)
	want["digest"] = "digest mismatch"

	m.client("ace")
	m.waitState("ace", "web", "applied")
	for module, says := range want {
		r := m.waitState("ace", module, "failed")
		why := fmt.Sprint(r["reason"])
		t.Logf("%s: %s", module, why)
		if !contains(why, says) {
			t.Errorf("%s: reason %q does not say %q", module, why, says)
		}
		if _, err := os.Stat(filepath.Join(m.root, "etc", module)); err == nil {
			t.Errorf("%s: a file of a failed module was written", module)
		}
	}
	// The daemon goes on: web follows its values.
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitState("ace", "web", "applied")
}

// Keys out of their bucket's shape — a bad = escape, an escaped plain
// byte, too few or too many tokens — in every bucket the client reads:
// ignored for filling and logged by key; the modules beside them are
// applied. The server's verb lists them under out_of_shape for the buckets
// it serves. (An empty token cannot be stored: NATS refuses a key with
// "..".)
func TestKeysOutOfShapeAreIgnoredLoggedAndListedByTheServer(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.webModule()
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"forge": "user = ${bound:gitea-read:as}\n"})
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace"}}`)

	asg := `{"node":"ace","module":"web","provisioning":{}}`
	bad := map[string][]string{ // bucket → keys out of shape
		// =FF and =FE decode to bytes that are not UTF-8: two such modules
		// were one ("\ufffd") at the fill socket and the vault.
		spec.AssignmentsBucket: {"ace.we=ZZ", "ace.=41b", "ace", "ace.web.extra", "ace.=FF", "ace.=FE"},
		spec.ConfigBucket:      {"ace.web=ZZ.model", "ace.web.=6Dodel", "ace.web", "ace.web.model.extra", "ace.web.=FF"},
		spec.RegistryBucket:    {"con=ZZ", "=63onfig", "con.fig"},
		"gitea_bound":          {"ace.c=ZZ.gitea-read", "ace.cc", "ace.cc.gitea-read.l.extra"},
	}
	for b, keys := range bad {
		for _, k := range keys {
			v := "x"
			switch b {
			case spec.AssignmentsBucket:
				v = asg
			case spec.RegistryBucket:
				v = `{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`
			case "gitea_bound":
				v = `{"state":"bound","values":{"as":"evil"}}`
			}
			m.put(b, k, v)
		}
	}
	m.client("ace")
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\n")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "cc", "applied")

	// Each is logged by key; none became a module or a value.
	bustest.Eventually(m.t, 5*time.Second, func() error {
		logs := m.logs.String()
		for b, keys := range bad {
			for _, k := range keys {
				if !logged(logs, b, k) {
					return fmt.Errorf("%s %q not logged as out of shape", b, k)
				}
			}
		}
		return nil
	})
	applied, _ := m.kv(spec.AppliedBucket).ListKeys(t.Context())
	for k := range applied.Keys() {
		if k != "ace.web" && k != "ace.cc" {
			t.Errorf("a report for %q, from a key out of shape", k)
		}
	}

	// The server's verb lists every key out of shape in the buckets it
	// serves, with why, and still lists the good ones.
	for what, keys := range map[string][]string{
		"registry": bad[spec.RegistryBucket],
		"needs":    {"zed.m=ZZ.config.k", "zed.m.config", "zed.m.config.k.extra"},
		"applied":  {"zed.=6D", "zed", "zed.m.extra"},
		"collect":  {"zed.c=ZZ.m", "zed.c", "zed.c.m.extra"},
	} {
		bucket := map[string]string{"needs": spec.NeedsBucket, "applied": spec.AppliedBucket, "collect": spec.CollectBucket}[what]
		for _, k := range keys {
			if bucket != "" {
				m.put(bucket, k, `{}`)
			}
		}
		got := m.query(what)
		for _, k := range keys {
			if !contains(got, `{"key":"`+k+`","why":"`) {
				t.Errorf("%s: %s not listed out of shape in %s", what, k, got)
			}
		}
		if what == "registry" && !contains(got, `"key":"config"`) {
			t.Errorf("registry: the good keys are not listed: %s", got)
		}
	}
}

// logged says whether logs hold a line saying bucket's key is out of
// shape.
func logged(logs, bucket, key string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["bucket"] == bucket && l["key"] == key &&
			strings.Contains(fmt.Sprint(l["message"]), "out of shape") && l["why"] != nil {
			return true
		}
	}
	return false
}

// query asks the server's verb (a server started for it) for what.
func (m *mesh) query(what string) string {
	m.t.Helper()
	stop, err := srv.ServeQuery(context.Background(), m.nc, m.js, zerolog.New(m.logs))
	if err != nil {
		m.t.Fatal(err)
	}
	defer stop()
	msg, err := m.nc.Request(spec.QuerySubject, []byte(`{"what":"`+what+`"}`), 10*time.Second)
	if err != nil {
		m.t.Fatal(err)
	}
	return string(msg.Data)
}
