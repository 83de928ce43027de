package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopWithParent has the kernel send this process SIGTERM when the process
// that started it goes, so the lab stops as for SIGTERM (cleanly) rather
// than run on orphaned. `go run ./cmd/mesh-lab` is the go command running
// the lab as its child, and a SIGTERM to the go command ends it alone: the
// lab ran on with its port, sockets and store, and the next `make run`
// found the port taken. ppid is the parent when main began: one gone
// before the kernel was asked is seen by the parent having changed.
func stopWithParent(ppid int) {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return
	}
	if os.Getppid() != ppid {
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
