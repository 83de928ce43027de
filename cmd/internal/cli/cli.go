// Package cli holds what the project's commands share: the logger their
// --log-format and --log-level flags make.
package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/outputs/control"
)

// TimeFormat is the JSON log's timestamp: RFC 3339 in UTC with
// milliseconds, enough to read the phases of a cold start from the log.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Levels are the log levels a --log-level takes, for its help and its error.
const Levels = "trace, debug, info, warn, error"

// A duration in a log line reads as Go writes it ("1m0s", "250ms") in
// both formats: zerolog's default, a float of milliseconds, named no unit
// ("retry_after=600000", "after=52.977528"; an outside audit).
func init() { zerolog.DurationFieldFormat = zerolog.DurationFormatString }

// Logger makes a zerolog logger writing to w: JSON (format "json") or for
// people ("console"), at level, each event carrying the service's name and
// its time in TimeFormat (by a hook: zerolog's own format is a global).
func Logger(w io.Writer, format, level, service string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level %q is not a log level (%s)", level, Levels)
	}
	switch format {
	case "json":
		w = jsonSafeWriter{w}
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, FormatFieldValue: consoleValue, NoColor: !colorful(w)}
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format %q is not json or console", format)
	}
	return zerolog.New(w).Level(lvl).Hook(stamp{}).With().Str("service", service).Logger(), nil
}

// colorful says whether console lines to w are coloured: only on a
// terminal, and not when NO_COLOR is set (no-color.org). The console
// format is also what an operator reads in journald or a file, where the
// colours' escape sequences are noise (`\x1b[32mINF\x1b[0m`), and grep
// for "INF" or "module=web" missed them.
func colorful(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// stamp adds the event's time, in UTC to the millisecond.
type stamp struct{}

func (stamp) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(TimeFormat))
}

// consoleValue is a field's value as --log-format console prints it. The
// console writer quotes a string field with its control runes escaped,
// but prints a list or an object (a module's waiting list, the modules a
// sweep found gone) as JSON, which leaves DEL, the C1 controls (U+009B is
// a CSI) and format runes such as a bidi override raw: names from the bus
// or a templates archive would drive the operator's terminal. Every rune
// that is not printable is written as a \u escape (the same rune, inside
// a JSON string), a byte that is not UTF-8 as \x.., the rest as it was
// (control.EscapeU).
func consoleValue(i any) string { return control.EscapeU(fmt.Sprintf("%s", i)) }

// jsonSafeWriter writes each JSON event with every rune that is not
// printable as a \u escape (control.JSONSafe). zerolog escapes the C0
// controls of a string field but writes the C1 controls (U+009B is a CSI)
// and format runes such as a bidi override raw, and encoding/json (a list
// or an object field) DEL too: a provider's or the vault's reason, or a
// module's name in a key, drove the terminal of whoever read the log with
// journalctl -f, kubectl logs or tail -f. The escape is the same rune to a
// program reading the JSON.
type jsonSafeWriter struct{ w io.Writer }

func (j jsonSafeWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(control.JSONSafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
