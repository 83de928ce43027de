// Package proctest is what the benchmarks (and the chaos run) of a
// command run as its own process share: building the command, running it
// with the Go runtime's trace of its collections, reading its resident
// set, CPU and wake-ups from /proc, seeing from outside when a file gets
// its new bytes, and saying whether a target was met. It imports nothing
// of the project.
package proctest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Build builds the command pkg (an import path) into a temp dir, or returns
// $env when it names a binary already built (one kept for perf to read its
// symbols from after the run). It skips the benchmark (or test: the chaos
// run starts real client processes too) without /proc or a go command.
func Build(b testing.TB, pkg, env string) string {
	b.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	if bin := os.Getenv(env); env != "" && bin != "" {
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build " + pkg + " with")
	}
	bin := filepath.Join(b.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command(gobin, "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Status is a "kB" field of /proc/<pid>/status (VmHWM, VmRSS …), in bytes.
func Status(b testing.TB, pid int, field string) int64 {
	b.Helper()
	return kB(b, fmt.Sprintf("/proc/%d/status", pid), field)
}

// Rollup is a field of /proc/<pid>/smaps_rollup (the process's memory
// summed over its mappings: AnonHugePages, Rss, …), in bytes.
func Rollup(b testing.TB, pid int, field string) int64 {
	b.Helper()
	return kB(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid), field)
}

// kB reads the "field: N kB" line of a /proc file, in bytes.
func kB(b testing.TB, path, field string) int64 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in %s", field, path)
	return 0
}

// CPU is a process's CPU time so far: the sum over its threads of the
// time each spent on a CPU (/proc/<pid>/task/*/schedstat, in nanoseconds).
// /proc/<pid>/stat's user and system times count in ticks of 10 ms, too
// coarse for 1,000 changes of 0.1 ms or a minute of an idle process. A
// thread that exits between two readings takes its time with it (Go's
// threads rarely exit). Without schedstat, it falls back to the ticks.
func CPU(b testing.TB, pid int) time.Duration {
	b.Helper()
	ns, _, ok := schedstat(b, pid)
	if !ok {
		return ticks(b, pid)
	}
	return time.Duration(ns)
}

// Runs is how many times a thread of the process was put on a CPU so far
// (the sum of schedstat's third field): each wake-up of the process is at
// least one, and on a paravirtualised guest each costs the switch into its
// page tables. It is -1 without schedstat.
func Runs(b testing.TB, pid int) int64 {
	b.Helper()
	_, runs, ok := schedstat(b, pid)
	if !ok {
		return -1
	}
	return runs
}

// schedstat sums /proc/<pid>/task/*/schedstat over the process's threads:
// the nanoseconds they ran and the times they were put on a CPU. ok is
// false when the kernel keeps no schedstat.
func schedstat(b testing.TB, pid int) (ns, runs int64, ok bool) {
	b.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tasks {
		path := fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name())
		raw, err := os.ReadFile(path)
		if os.IsNotExist(err) && !ok {
			if _, err := os.Stat(filepath.Dir(path)); err == nil {
				return 0, 0, false // the thread is there, its schedstat is not
			}
		}
		if err != nil {
			continue // the thread ended since ReadDir
		}
		f := strings.Fields(string(raw))
		if len(f) < 3 {
			continue
		}
		n, err1 := strconv.ParseInt(f[0], 10, 64)
		r, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("%s: %q", path, raw)
		}
		ns, runs, ok = ns+n, runs+r, true
	}
	return ns, runs, ok
}

// ticks is a process's user+system CPU time so far, from /proc/<pid>/stat
// (in clock ticks of 1/100 s, as on Linux).
func ticks(b testing.TB, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) may hold spaces: fields are counted after its ')'.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
