// Package quietconn wraps the daemon's sockets so that their reads and
// writes do not wake the Go runtime's monitor thread: on a node the daemon
// mostly waits, and each wake-up cost it more than its own work (issue 20).
package quietconn

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Every system call a goroutine makes through the syscall package enters
// the runtime's syscall state, and the first such call after the process
// idled wakes sysmon, the runtime's monitor thread, which then polls every
// 20 µs until every P is idle again. A change the daemon handles is three
// short bursts (the KV message, the fill's answer, the report's ack), each
// begun by a socket read, so each woke sysmon: a futex wake, a context
// switch and its polling, on a virtualised node ~30 µs each, a quarter of
// a change's CPU (docs/PERFORMANCE.md, issue 20's sixth pass).
//
// A socket of the net package is non-blocking: a read or write either
// does its work at once or says EAGAIN, and the wait is the netpoller's.
// Such a call never blocks its thread, so it needs none of the syscall
// state's hand-off of the P, and a Conn makes it with syscall.RawSyscall,
// which does not enter that state, through the socket's syscall.RawConn,
// which keeps the netpoller's waiting, deadlines and closing as they are.
//
// Under the race detector the reads and writes go through syscall.Read
// and syscall.Write instead (sys_other.go): the detector learns from those
// that what one goroutine wrote to a socket happens before what another
// read from it, and without that an in-process test's server and client
// would be reported as racing.

// Conn is a net.Conn whose Read and Write make raw system calls. Its other
// methods (deadlines, Close, addresses) are the wrapped connection's.
type Conn struct {
	net.Conn
	rc syscall.RawConn
	rd op // the Read under way
	wr op // the Write under way
}

// op is a read or write under way: its buffer, what it did, and the
// function the RawConn calls, made once per Conn, since a closure made per
// call would be allocated per call (a change makes several). Reads are
// serialized by rd.mu, writes by wr.mu, as net.Conn's are.
type op struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	try   func(fd uintptr) bool
}

// Wrap returns c as a Conn, or c itself when it has no file descriptor to
// read and write directly (a TLS or in-memory connection).
func Wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	qc := &Conn{Conn: c, rc: rc}
	qc.rd.try = qc.rd.tryRead
	qc.wr.try = qc.wr.tryWrite
	return qc
}

// Read reads what the socket holds, waiting for it in the netpoller when
// it holds nothing; io.EOF once the peer closed its side.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.run(&c.rd, "read", p, c.rc.Read)
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// tryRead is one try of a Read: false when the socket holds nothing yet.
func (o *op) tryRead(fd uintptr) bool {
	for {
		o.n, o.errno = read(fd, o.p)
		if o.errno != syscall.EINTR {
			return o.errno != syscall.EAGAIN
		}
	}
}

// Write writes all of p, waiting in the netpoller while the socket's
// buffer is full.
func (c *Conn) Write(p []byte) (int, error) {
	return c.run(&c.wr, "write", p, c.rc.Write)
}

// run is one Read or Write (name) of p: o's try handed to the RawConn's
// Read or Write (raw), and what it did said as the net package says it.
func (c *Conn) run(o *op, name string, p []byte, raw func(func(fd uintptr) bool) error) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.errno = p, 0, 0
	err := raw(o.try)
	n, errno := o.n, o.errno
	o.p = nil
	switch {
	case err != nil:
		return n, c.opError(name, err)
	case errno != 0:
		return n, c.opError(name, os.NewSyscallError(name, errno))
	}
	return n, nil
}

// tryWrite writes what is left of the Write's buffer: false when the
// socket's buffer is full before all of it went.
func (o *op) tryWrite(fd uintptr) bool {
	for o.n < len(o.p) {
		m, e := write(fd, o.p[o.n:])
		switch e {
		case 0:
			o.n += m
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// opError says err as the net package says a read's or write's: the
// RawConn's own errors are already *net.OpError (a deadline, a closed
// connection), named after its raw-read and raw-write.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		e := *oe
		e.Op = op
		return &e
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
