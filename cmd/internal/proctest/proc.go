package proctest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proc is a command running as its own process for a benchmark. A Go
// command runs with GODEBUG=gctrace=1 (unless its GODEBUG says another
// gctrace): after each collection the runtime
// writes the live heap it marked to stderr, which is how its heap is read
// from outside without the command having to serve it.
type Proc struct {
	Cmd   *exec.Cmd
	Pid   int
	Start time.Time
	out   *lockedBuffer
}

// Start runs bin with args and the environment extra added to this one's,
// and kills it when the benchmark ends (printing its output if the
// benchmark failed).
func Start(b testing.TB, bin string, args, extra []string) *Proc {
	b.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), out: &lockedBuffer{}}
	p.Cmd.Stdout, p.Cmd.Stderr = p.out, p.out
	godebug := os.Getenv("GODEBUG")
	var env []string
	for _, e := range append(os.Environ(), extra...) {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			godebug = v
			continue
		}
		env = append(env, e)
	}
	if !strings.Contains(godebug, "gctrace=") { // a gctrace given is kept
		if godebug != "" {
			godebug += ","
		}
		godebug += "gctrace=1"
	}
	p.Cmd.Env = append(env, "GODEBUG="+godebug)
	p.Start = time.Now()
	if err := p.Cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.Pid = p.Cmd.Process.Pid
	b.Cleanup(func() {
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
		if b.Failed() {
			b.Logf("%s's output:\n%s", bin, p.Output())
		}
		if f := os.Getenv("BENCH_PROC_OUT"); f != "" { // its gctrace and log, for a look after
			if err := os.WriteFile(f, []byte(p.Output()), 0o644); err != nil {
				b.Log(err)
			}
		}
	})
	return p
}

// Output is what the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// GC is one collection as gctrace told it.
type GC struct {
	At   time.Duration // since the process started
	Wall time.Duration // from its start to its end (its phases' clock times)
	Live int64         // the heap marked live, in bytes (whole MiB: the trace's unit)
	// CPU is the collection's CPU as the runtime counts it: its mark
	// workers' time includes time their threads waited for a core the
	// machine's other processes held, so under load it can exceed what
	// /proc counts.
	CPU    time.Duration
	Forced bool // the runtime's own, two minutes after the last one (or runtime.GC)
}

// gcLine is gctrace's line, as of Go 1.26:
// gc 4 @0.205s 2%: 0.25+19+0.40 ms clock, 0.50+0.16/3.5/0.27+0.81 ms cpu, 22->23->13 MB, 24 MB goal, …
var gcLine = regexp.MustCompile(`(?m)^gc \d+ @([0-9.]+)s \d+%: ([0-9.+]+) ms clock, ([0-9.+/]+) ms cpu, \d+->\d+->(\d+) MB.*$`)

// GCs are the collections so far, in order.
func (p *Proc) GCs() []GC {
	var out []GC
	for _, m := range gcLine.FindAllStringSubmatch(p.Output(), -1) {
		at, _ := strconv.ParseFloat(m[1], 64)
		live, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, GC{At: time.Duration(at * float64(time.Second)), Wall: sumMs(m[2]), CPU: sumMs(m[3]),
			Live: live << 20, Forced: strings.HasSuffix(m[0], "(forced)")})
	}
	return out
}

// sumMs adds up gctrace's "a+b/c/d+e" milliseconds.
func sumMs(s string) time.Duration {
	var sum float64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '+' || r == '/' }) {
		v, _ := strconv.ParseFloat(f, 64)
		sum += v
	}
	return time.Duration(sum * float64(time.Millisecond))
}

// WaitGC waits up to timeout for a collection that began after the
// process had run for after (a Proc's age: time.Since(p.Start)), and
// returns the first; false if none came.
func (p *Proc) WaitGC(after, timeout time.Duration) (GC, bool) {
	deadline := time.Now().Add(timeout)
	for {
		for _, gc := range p.GCs() {
			if gc.At >= after {
				return gc, true
			}
		}
		if time.Now().After(deadline) {
			return GC{}, false
		}
		time.Sleep(100 * time.Millisecond) // polling a log, not waiting for an outcome
	}
}

// lockedBuffer is the process's output, written by exec's copying
// goroutines while the benchmark reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
