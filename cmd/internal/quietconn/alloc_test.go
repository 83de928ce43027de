package quietconn

import "testing"

// A change makes several reads and writes on these sockets: a closure
// made per call was four allocations a read and write, garbage the
// client's collector then paid for.
func TestAReadAndAWriteAllocateNothing(t *testing.T) {
	a, b := pair(t, "unix")
	buf := make([]byte, 64)
	msg := []byte("hello")
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := a.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per write and read, want none", n)
	}
}
