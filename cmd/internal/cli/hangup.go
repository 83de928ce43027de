package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
)

// IgnoreHangup keeps SIGHUP from killing a daemon: Go's default for it is
// to exit 129 at once, without a log line and leaving the socket behind,
// and an operator's "kill -HUP" (the usual reload) or a closed terminal
// would take the daemon down unannounced. The daemons have nothing to
// reload (their flags are read once; a creds file is read at each
// reconnect), so a SIGHUP is logged and otherwise ignored; SIGINT and
// SIGTERM stop them. The returned func stops listening.
func IgnoreHangup(log zerolog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ch:
				log.Warn().Msg("SIGHUP: nothing to reload; ignored (SIGTERM or SIGINT stops)")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
