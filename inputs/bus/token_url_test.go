package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A bus authorised by token takes it in the URL as nats://TOKEN@host.
// nats.go's ConnectedUrlRedacted hides a password only, so the "connected
// to the bus" and "reconnected to the bus" lines showed the token whole.
// Every line logs the URL through RedactURL.
func TestATokenInTheURLIsNeverLogged(t *testing.T) {
	const token = "S3CRET-token-in-the-url"
	auth := func(o *server.Options) { o.Authorization = token }
	port := bustest.FreePort(t)
	var logs bustest.Buffer
	o := Options{Name: "provisioner.test", URL: fmt.Sprintf("nats://%s@127.0.0.1:%d", token, port), Log: zerolog.New(&logs)}
	nc, err := Connect(o) // the bus not up yet: connected in the background
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := bustest.Start(t, auth, func(so *server.Options) { so.Port = port })
	waitLog := func(msg string) {
		bustest.Eventually(t, 10*time.Second, func() error {
			if !nc.IsConnected() || !strings.Contains(logs.String(), msg) {
				return fmt.Errorf("no %q yet:\n%s", msg, logs.String())
			}
			return nil
		})
	}
	waitLog(`"connected to the bus"`)
	bustest.Restart(t, s, auth)
	waitLog(`"reconnected to the bus"`)
	if strings.Contains(logs.String(), token) {
		t.Fatalf("the token is in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"url":"nats://[redacted]@127.0.0.1:`) {
		t.Fatalf("the URL is not named redacted:\n%s", logs.String())
	}
}
