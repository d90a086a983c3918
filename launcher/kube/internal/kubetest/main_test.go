package kubetest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"testing"
)

// echoEnv makes the test binary a pod's TCP server instead of running
// tests: it listens on $POD_IP:$PORT, greets each client with facts about
// its pod (its pid, its hostname, whether it could write to /tmp), then
// echoes lines.
const echoEnv = "KUBETEST_ECHO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) == "1" {
		if err := echoServer(); err != nil {
			fmt.Fprintln(os.Stderr, "echo server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func echoServer() error {
	host, _ := os.Hostname()
	mark := "/tmp/kubetest-" + host
	wrote := os.WriteFile(mark, []byte("pod"), 0o644) == nil
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("POD_IP"), os.Getenv("PORT")))
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "pid=%d host=%s tmp-written=%t\n", os.Getpid(), host, wrote)
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				fmt.Fprintf(c, "echo %s\n", sc.Text())
			}
		}()
	}
}
