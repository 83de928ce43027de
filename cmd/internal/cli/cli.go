// Package cli holds what the project's commands share: the logger their
// --log-format and --log-level flags make.
package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// Logger makes a zerolog logger writing to w: JSON (format "json") or for
// people ("console"), at level, each event carrying the service's name.
func Logger(w io.Writer, format, level, service string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level %q is not a log level (debug, info, warn, error)", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format %q is not json or console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("service", service).Logger(), nil
}
