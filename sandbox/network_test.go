package sandbox_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// socketsHelper makes the test binary try the kinds of socket a command
// may want, printing one line per kind: "unix ok", "udp denied: …".
const socketsHelper = "ink-test-sockets"

func trySockets() int {
	try := func(name string, domain, typ int) {
		fd, err := syscall.Socket(domain, typ, 0)
		if err != nil {
			fmt.Printf("%s denied: %v\n", name, err)
			return
		}
		syscall.Close(fd)
		fmt.Printf("%s ok\n", name)
	}
	try("unix", syscall.AF_UNIX, syscall.SOCK_STREAM)
	try("tcp4", syscall.AF_INET, syscall.SOCK_STREAM)
	try("udp4", syscall.AF_INET, syscall.SOCK_DGRAM)
	try("tcp6", syscall.AF_INET6, syscall.SOCK_STREAM)
	try("netlink", syscall.AF_NETLINK, syscall.SOCK_RAW)
	if fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err != nil {
		fmt.Printf("unixpair denied: %v\n", err)
	} else {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		fmt.Println("unixpair ok")
	}
	// A Unix socket server and client, as local tools (and git's
	// credential cache) use them.
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		fmt.Println("unix listen denied:", err)
		return 0
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		fmt.Println("unix listen denied:", err)
		return 0
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		fmt.Println("unix dial denied:", err)
		return 0
	}
	buf := make([]byte, 2)
	n, _ := c.Read(buf)
	c.Close()
	fmt.Printf("unix talk %s\n", buf[:n])
	return 0
}

// loopbackServer is an HTTP server of the test on 127.0.0.1 answering
// "reached".
func loopbackServer(t *testing.T) (url, port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "reached")
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return srv.URL, port
}

// TestSandboxCutsTheNetwork: without the network a command cannot connect
// to a server on loopback (bash's /dev/tcp, curl where installed), open
// any socket but a Unix one, or listen on a TCP port; Unix sockets keep
// working. With it, the same command reaches the server.
func TestSandboxCutsTheNetwork(t *testing.T) {
	requireLandlock(t)
	if err := sandbox.CheckNetwork(); err != nil {
		t.Fatalf("this kernel cannot cut the network: %v", err)
	}
	url, port := loopbackServer(t)
	d := newDirs(t)
	tcp := `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3`
	offline := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root}
	online := offline
	online.Network = true

	r := runIn(t, offline, d.root, tcp)
	if r.code == 0 || strings.Contains(r.out, "reached") || !strings.Contains(r.out, "Operation not permitted") {
		t.Errorf("/dev/tcp without the network: exit %d\n%s", r.code, r.out)
	}
	r = runIn(t, online, d.root, tcp)
	wantRan(t, r)
	if !strings.Contains(r.out, "reached") {
		t.Errorf("/dev/tcp with the network did not reach the server:\n%s", r.out)
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		r = runIn(t, offline, d.root, curl+" -sS --max-time 20 "+url)
		if r.code == 0 || strings.Contains(r.out, "reached") {
			t.Errorf("curl without the network: exit %d\n%s", r.code, r.out)
		}
		r = runIn(t, online, d.root, curl+" -sS --max-time 20 "+url)
		wantRan(t, r)
		if r.out != "reached" {
			t.Errorf("curl with the network: %q", r.out)
		}
	}

	r = runIn(t, offline, d.root, `"$INK_TEST_BIN" `+socketsHelper)
	wantRan(t, r)
	for _, want := range []string{"unix ok", "unixpair ok", "unix talk hi", "tcp4 denied: operation not permitted",
		"udp4 denied: operation not permitted", "tcp6 denied: operation not permitted", "netlink denied"} {
		if !strings.Contains(r.out, want+"\n") && !strings.Contains(r.out, want) {
			t.Errorf("sockets without the network: want %q in\n%s", want, r.out)
		}
	}
	r = runIn(t, online, d.root, `"$INK_TEST_BIN" `+socketsHelper)
	wantRan(t, r)
	if !strings.Contains(r.out, "tcp4 ok") || !strings.Contains(r.out, "udp4 ok") {
		t.Errorf("sockets with the network:\n%s", r.out)
	}
}

// TestSandboxClosesInheritedDescriptors: a descriptor the command's
// starter left open (without close-on-exec) is closed in the command, so
// it cannot write through it to a file it may not open.
func TestSandboxClosesInheritedDescriptors(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	target := filepath.Join(d.sibling, "target")
	if err := os.WriteFile(target, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(target, syscall.O_WRONLY|syscall.O_APPEND, 0) // no O_CLOEXEC: inherited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	r := runIn(t, sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp}, d.root,
		fmt.Sprintf("echo leaked >&%d; echo rc=$?; ls /proc/self/fd | tr '\\n' ' '", fd))
	if !strings.Contains(r.out, "Bad file descriptor") || !strings.Contains(r.out, "rc=1") {
		t.Errorf("the inherited descriptor %d is open in the command:\n%s", fd, r.out)
	}
	if data, _ := os.ReadFile(target); string(data) != "before\n" {
		t.Errorf("the command wrote through the inherited descriptor: %q", data)
	}
}
