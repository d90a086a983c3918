package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// server is the node's kubelet endpoint: container logs and port forwarding,
// over HTTPS with a self-signed certificate (the apiserver, started without
// --kubelet-certificate-authority, does not verify it).
func (a *agent) server() (*http.Server, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", a.serveLogs)
	mux.HandleFunc("/portForward/{ns}/{pod}", a.servePortForward)
	mux.HandleFunc("/portForward/{ns}/{pod}/{uid}", a.servePortForward)
	return &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ErrorLog:  log.Default(),
	}, nil
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "inknode"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// serveLogs writes the container's output: all of it, or the last
// tailLines lines, then with follow=true what it writes until it ends or the
// client goes.
func (a *agent) serveLogs(w http.ResponseWriter, req *http.Request) {
	run := a.lookup(req.PathValue("ns"), req.PathValue("pod"))
	if run == nil || run.container != req.PathValue("container") || run.logPath == "" {
		http.Error(w, fmt.Sprintf("container %q of pod %s/%s is not on node %s", req.PathValue("container"), req.PathValue("ns"), req.PathValue("pod"), a.cfg.name), http.StatusNotFound)
		return
	}
	f, err := os.Open(run.logPath)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	if n, err := strconv.Atoi(req.URL.Query().Get("tailLines")); err == nil && n >= 0 {
		if err := seekTail(f, n); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	follow, _ := strconv.ParseBool(req.URL.Query().Get("follow"))
	w.Header().Set("Content-Type", "text/plain")
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		if !follow {
			return
		}
		select {
		case <-run.done:
			// Ended: whatever it wrote last is in the file now.
			if _, err := io.Copy(w, f); err == nil && flusher != nil {
				flusher.Flush()
			}
			return
		case <-req.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int) error {
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	off := len(b)
	if n == 0 {
		_, err = f.Seek(int64(off), io.SeekStart)
		return err
	}
	if off > 0 && b[off-1] == '\n' {
		off--
	}
	for i := off - 1; i >= 0 && n > 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				off = i + 1
				break
			}
		}
		if i == 0 {
			off = 0
		}
	}
	if n > 0 {
		off = 0
	}
	_, err = f.Seek(int64(off), io.SeekStart)
	return err
}

// servePortForward serves the apiserver's pods/portforward stream, dialling
// the pod's IP for each forwarded port.
func (a *agent) servePortForward(w http.ResponseWriter, req *http.Request) {
	run := a.lookup(req.PathValue("ns"), req.PathValue("pod"))
	if run == nil || run.ip == "" {
		http.Error(w, fmt.Sprintf("pod %s/%s is not on node %s", req.PathValue("ns"), req.PathValue("pod"), a.cfg.name), http.StatusNotFound)
		return
	}
	opts, err := portforward.NewV4Options(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, req, dialer{run: run}, run.key, string(run.uid), opts, 30*time.Minute, 30*time.Second, portforward.SupportedProtocols)
}

// dialer forwards a stream to a port of one pod, inside its network
// namespace as a container runtime does (dialPod).
type dialer struct{ run *podRun }

func (d dialer) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	conn, err := dialPod(ctx, d.run, int(port))
	if err != nil {
		return fmt.Errorf("pod %s port %d: %w", d.run.key, port, err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	io.Copy(stream, conn)
	stream.Close()
	wg.Wait()
	return nil
}
