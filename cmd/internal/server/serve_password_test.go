package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Config's User and Password log the server in as a password user of the
// example configuration (no creds file, no password in the URL), and the
// password is in no log line.
func TestRunLogsInAsAPasswordUser(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../../examples/nats/server.conf"))
	password := auth.DevPassword(BusName)
	var logs bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), User: BusName, Password: password, Log: zerolog.New(&logs)})
	}()
	bustest.Eventually(t, 20*time.Second, func() error {
		if !strings.Contains(logs.String(), "provisioner server serving") {
			return fmt.Errorf("not serving yet:\n%s", logs.String())
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v", err)
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log holds the password:\n%s", logs.String())
	}
}
