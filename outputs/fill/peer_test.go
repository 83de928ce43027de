//go:build linux

package fill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// peerDialEnv, when set in a child's environment, makes the child dial the
// socket it names and fill one file (see TestPeerDialHelper).
const peerDialEnv = "FILL_PEER_DIAL_SOCKET"

// TestPeerDialHelper is not a test: it is the body of the child process
// that dials the fill socket as another uid.
func TestPeerDialHelper(t *testing.T) {
	sock := os.Getenv(peerDialEnv)
	if sock == "" {
		t.Skip("runs only as the child of TestTheFillSocketChecksThePeersUID")
	}
	c := &Client{Socket: sock}
	_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{{Path: "/from-child", Form: FormOwned, Content: []byte("x")}}})
	if err != nil {
		fmt.Println("FILL-ERROR:", err)
		return
	}
	fmt.Println("FILL-OK")
}

func TestTheSocketIs0660(t *testing.T) {
	dir := socketDir(t)
	sock := filepath.Join(dir, "fill.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Root: t.TempDir()}).Serve(ctx, sock) }()
	defer func() { cancel(); <-done }()
	bustest.Eventually(t, 5*time.Second, func() error {
		fi, err := os.Stat(sock)
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != 0o660 {
			return fmt.Errorf("mode %04o, want 0660", fi.Mode().Perm())
		}
		return nil
	})
}

// In process: the peer is this test (our own uid); a list without it
// refuses, a list with it admits.
func TestAllowUIDsRefusesAPeerNotListed(t *testing.T) {
	root := t.TempDir()
	self := os.Getuid()
	req := Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte("x")}}}

	c := startServer(t, &Server{Root: root, AllowUIDs: []int{self + 4242}})
	_, err := c.Fill(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), fmt.Sprintf("peer uid %d is not among the allowed uids", self)) {
		t.Fatalf("want a 403 naming uid %d, got %v", self, err)
	}
	mustAbsent(t, filepath.Join(root, "f"))

	c = startServer(t, &Server{Root: root, AllowUIDs: []int{self + 4242, self}})
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Fatalf("listed uid: %s", got)
	}
}

// As root: a child process running as uid 65534 (group 65534, which owns
// the 0660 socket, so the mode lets it connect) is refused unless listed.
func TestTheFillSocketChecksThePeersUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child process as another uid (SysProcAttr.Credential)")
	}
	const other = 65534
	exe := childBinary(t)
	for _, tc := range []struct {
		allow []int
		want  string
	}{
		{[]int{0}, "403"},
		{[]int{0, other}, "FILL-OK"},
	} {
		t.Run(fmt.Sprint(tc.allow), func(t *testing.T) {
			root := t.TempDir()
			dir := socketDir(t)
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(dir, "fill.sock")
			startServerAt(t, &Server{Root: root, AllowUIDs: tc.allow}, sock)
			if err := os.Chown(sock, 0, other); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run=^TestPeerDialHelper$", "-test.v")
			cmd.Dir = "/"
			cmd.Env = []string{peerDialEnv + "=" + sock, "HOME=/"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: other, Gid: other}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("allow %v: child said\n%s\nwant %q", tc.allow, out, tc.want)
			}
			_, statErr := os.Stat(filepath.Join(root, "from-child"))
			if written := statErr == nil; written != (tc.want == "FILL-OK") {
				t.Fatalf("allow %v: file written = %v", tc.allow, written)
			}
		})
	}
}

// childBinary copies this test binary where another uid may run it.
func childBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := socketDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "fill.test")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// startServerAt runs s on sock until the test ends.
func startServerAt(t *testing.T, s *Server, sock string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
	bustest.Eventually(t, 5*time.Second, func() error { _, err := os.Stat(sock); return err })
}

// TestAPeerNotAllowedIsAnswered403AsItConnects: with AllowUIDs, a peer not
// listed is answered 403 as soon as it connects, before it sends a byte,
// and closed: it holds none of the server's MaxConns connections, so such
// peers cannot keep the allowed client out. Before, its connection was
// held until its request was read (10 s for a header that never comes).
func TestAPeerNotAllowedIsAnswered403AsItConnects(t *testing.T) {
	self := os.Getuid()
	s := &Server{Root: t.TempDir(), AllowUIDs: []int{self + 4242}, MaxConns: 1}
	c := startServerUndialled(t, s)
	for i := range 3 {
		conn, err := net.Dial("unix", c.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("connection %d, nothing sent: no answer (%v)", i, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), fmt.Sprintf("peer uid %d is not among the allowed uids", self)) {
			t.Errorf("connection %d: %d %s; want a 403 naming uid %d", i, resp.StatusCode, msg, self)
		}
	}
}
