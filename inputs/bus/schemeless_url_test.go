package bus

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A --nats entry without "://" is nats:// (CheckURLs and nats.go both read
// it so), and may carry user:password@ or token@ as any other: the line
// saying the bus is not reachable yet named it whole, password and all.
func TestAURLWithoutASchemeIsNamedRedactedToo(t *testing.T) {
	const pw = "S3CRET-schemeless-pw"
	port := bustest.FreePort(t)
	for _, u := range []string{
		fmt.Sprintf("alice:%s@127.0.0.1:%d", pw, port),
		fmt.Sprintf("%s@127.0.0.1:%d", pw, port), // a token
		fmt.Sprintf("nats://127.0.0.1:%d, alice:%s@127.0.0.1:%d", port, pw, port),
	} {
		if err := CheckURLs(u); err != nil {
			t.Fatalf("CheckURLs(%q): %v (it is a URL nats.go takes)", u, err)
		}
		var logs bustest.Buffer
		nc, err := Connect(Options{Name: "provisioner.test", URL: u, Log: zerolog.New(&logs)})
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		if !strings.Contains(logs.String(), "bus not reachable yet") {
			t.Fatalf("%s: no line says the bus is not reachable:\n%s", u, logs.String())
		}
		if strings.Contains(logs.String(), pw) {
			t.Errorf("%s: the password is in the log:\n%s", u, logs.String())
		}
		if got := RedactURL(u); strings.Contains(got, pw) || !strings.Contains(got, "[redacted]@127.0.0.1") {
			t.Errorf("RedactURL(%q) = %q", u, got)
		}
	}
}
