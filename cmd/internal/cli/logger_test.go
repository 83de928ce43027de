package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestAJSONLogLineCarriesItsTimeToTheMillisecondInUTC(t *testing.T) {
	var buf bytes.Buffer
	log, err := Logger(&buf, "json", "info", "test")
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("hello")
	var line struct {
		Time    string `json:"time"`
		Service string `json:"service"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not a JSON line: %q: %v", buf.String(), err)
	}
	at, err := time.Parse(TimeFormat, line.Time)
	if err != nil || len(line.Time) != len("2006-01-02T15:04:05.000Z") || line.Time[len(line.Time)-1] != 'Z' {
		t.Fatalf("time %q is not RFC 3339 UTC with milliseconds (%v)", line.Time, err)
	}
	if d := time.Since(at); d < 0 || d > time.Minute {
		t.Fatalf("time %q is %v from now", line.Time, d)
	}
	if line.Service != "test" {
		t.Fatalf("service %q, want test", line.Service)
	}
}

func TestABadLevelOrFormatIsRefused(t *testing.T) {
	if _, err := Logger(&bytes.Buffer{}, "json", "loud", "x"); err == nil {
		t.Fatal("level loud accepted")
	}
	if _, err := Logger(&bytes.Buffer{}, "xml", "info", "x"); err == nil {
		t.Fatal("format xml accepted")
	}
}

// A duration in a log line names its unit, in both formats: a float of
// milliseconds ("retry_after=600000") named none (an outside audit).
func TestADurationInALogLineNamesItsUnit(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		var buf bytes.Buffer
		log, err := Logger(&buf, format, "info", "test")
		if err != nil {
			t.Fatal(err)
		}
		log.Info().Dur("retry_after", 10*time.Minute).Dur("took", 250*time.Millisecond).Msg("hello")
		for _, want := range []string{"10m0s", "250ms"} {
			if !bytes.Contains(buf.Bytes(), []byte(want)) {
				t.Fatalf("%s line %q does not say %s", format, buf.String(), want)
			}
		}
	}
}
