package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// ownNetwork reports whether pods get a network namespace of their own:
// when the agent is root. A pod then has its own loopback, as a real pod
// does (a worker listening on :7777 in one pod does not take the port from
// the others), and the agent reaches it as a kubelet's runtime does: a
// port-forward dials the port inside the pod's namespace, and a relay on
// the host at the pod's IP forwards each declared containerPort into it.
// Without root, pods share the host's network namespace (and must listen
// on their own IP).
func ownNetwork() bool { return os.Geteuid() == 0 }

// loopbackUp brings up lo of the pod's new network namespace: with it,
// every 127/8 address is local, the pod's IP included.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// dialPod connects to port of run's pod: inside its network namespace
// when it has one, else at its IP.
func dialPod(ctx context.Context, run *podRun, port int) (net.Conn, error) {
	addr := net.JoinHostPort(run.ip, strconv.Itoa(port))
	pid := run.pid()
	if !ownNetwork() || pid <= 0 {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", addr)
	}
	type dialed struct {
		c   net.Conn
		err error
	}
	got := make(chan dialed, 1)
	go func() {
		// The socket is made in the thread's namespace; the thread is
		// locked to this goroutine while it is in the pod's, and left
		// locked (so it dies with the goroutine) if it cannot get back.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			got <- dialed{nil, err}
			return
		}
		defer self.Close()
		pod, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			runtime.UnlockOSThread()
			got <- dialed{nil, fmt.Errorf("pod %s network namespace: %w", run.key, err)}
			return
		}
		defer pod.Close()
		if err := unix.Setns(int(pod.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			got <- dialed{nil, fmt.Errorf("enter pod %s network namespace: %w", run.key, err)}
			return
		}
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		got <- dialed{c, err}
	}()
	d := <-got
	return d.c, d.err
}

// relay listens on the host at the pod's IP for each port and forwards
// every connection into the pod, until the returned stop is called.
func relay(run *podRun, ports []int) (stop func(), err error) {
	var lns []net.Listener
	stop = func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for _, port := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(run.ip, strconv.Itoa(port)))
		if err != nil {
			stop()
			return nil, fmt.Errorf("relay to pod %s: %w", run.key, err)
		}
		lns = append(lns, ln)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					p, err := dialPod(context.Background(), run, port)
					if err != nil {
						log.Printf("relay to pod %s port %d: %v", run.key, port, err)
						return
					}
					defer p.Close()
					splice(c, p)
				}()
			}
		}()
	}
	return stop, nil
}

// splice copies both ways until both directions end.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(b, a)
		if tc, ok := b.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	io.Copy(a, b)
	if tc, ok := a.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	wg.Wait()
}
