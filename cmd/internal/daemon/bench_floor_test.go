package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	"github.com/novox/mesh-provisioner/cmd/internal/quietconn"
)

// BenchmarkWakeFloor measures this machine's floor under the client's CPU
// targets, in the same run as ClientProcess: the CPU a Go process spends
// to be woken by one byte on a unix socket, read as the client reads its
// sockets (quietconn), and go back to sleep, with nothing else to do.
// A one-value change wakes the client at least three times (the bus's
// message, the fill socket's answer, the report put's ack), and an idle
// client once per heartbeat or timer; each wake costs at least this.
//
// On some guests the cost of a wake-up grows with the process's resident
// memory and with the time since it last ran (a hypervisor that keeps
// shadow page tables rebuilds them): so the floor is measured with no
// heap, with about a 500 × 1 client's (30 MiB) and a 100k client's
// (300 MiB), woken every 10 ms (changes close together) and every
// second (an idle client's heartbeats).
func BenchmarkWakeFloor(b *testing.B) {
	for _, heap := range []int{0, 30, 300} {
		for _, every := range []time.Duration{10 * time.Millisecond, time.Second} {
			b.Run(fmt.Sprintf("heap=%dMiB/every=%v", heap, every), func(b *testing.B) {
				wakeFloor(b, heap, every)
			})
		}
	}
}

// wakeChildEnv names, in a wake child's environment, the socket it dials;
// wakeHeapEnv its heap in MiB.
const wakeChildEnv, wakeHeapEnv = "BENCH_WAKE_SOCKET", "BENCH_WAKE_HEAP_MIB"

// wakeWindow is how long the wakes measured take in all.
const wakeWindow = 10 * time.Second

func wakeFloor(b *testing.B, heapMiB int, every time.Duration) {
	sock := filepath.Join(b.TempDir(), "wake.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	p := proctest.Start(b, os.Args[0], nil, []string{wakeChildEnv + "=" + sock, wakeHeapEnv + "=" + strconv.Itoa(heapMiB)})
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	one := make([]byte, 1)
	if _, err := c.Read(one); err != nil || one[0] != 'r' {
		b.Fatalf("the child did not say it was ready (%v): %s", err, p.Output())
	}
	time.Sleep(time.Second) // its heap's collections over
	n := int(wakeWindow / every)
	b.ResetTimer()
	// All the CPU the child spent from before the first wake to a while
	// after the last, per wake: a wake's cost is not all charged between
	// the byte and its echo (the switch away from the child, its runtime's
	// own wake-ups after it, come later).
	cpu0 := proctest.CPU(b, p.Pid)
	for range n {
		time.Sleep(every)
		if _, err := c.Write([]byte{'x'}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Read(one); err != nil || one[0] != 'x' {
			b.Fatalf("the child did not echo (%v): %s", err, p.Output())
		}
	}
	time.Sleep(min(every, 100*time.Millisecond)) // its last wake's tail
	used := proctest.CPU(b, p.Pid) - cpu0
	b.StopTimer()
	rss := float64(proctest.Status(b, p.Pid, "VmRSS")) / (1 << 20)
	perWake := ms(used) / float64(n)
	b.ReportMetric(perWake, "cpu-ms/wake")
	b.ReportMetric(rss, "RSS-MiB")
	b.Logf("floor | a Go process of %.0f MiB resident (%d MiB of heap) woken by a byte on its socket every %v, echoing it | %.3f ms of CPU a wake (%d wakes)", rss, heapMiB, every, perWake, n)
}

// wakeChild is the process BenchmarkWakeFloor wakes: it holds heapMiB of
// heap, says it is ready, then echoes each byte until the parent closes
// the socket.
func wakeChild(sock string, heapMiB int) {
	keep := make([][]byte, heapMiB)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
		for j := range keep[i] {
			keep[i][j] = byte(j)
		}
	}
	nc, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := quietconn.Wrap(nc)
	one := []byte{'r'}
	if _, err := c.Write(one); err != nil {
		os.Exit(1)
	}
	for { // each byte echoed, until the parent closes the socket
		if _, err := c.Read(one); err != nil {
			break
		}
		if _, err := c.Write(one); err != nil {
			break
		}
	}
	if len(keep) > 0 && keep[0][1] != 1 { // held to the end
		os.Exit(2)
	}
}
