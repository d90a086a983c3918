package ipc

// The supervisor's side of this file (ParseListenGreeting, DialRemote,
// PortOf) is called by launcher/kube only, which `ink` links in a build
// with the kube tag; the worker's side (ServeListen) is in every build.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/inkdev/ink/version"
)

// SupervisorCertEnv names the variable that gives a listening remote
// worker the SHA-256 of the one client certificate it accepts: its
// supervisor's. It is public (a hash); no secret is in a worker's
// environment.
const SupervisorCertEnv = "INK_SUPERVISOR_CERT_SHA256"

// remoteKeepalive is how often each end of a dialed worker's connection
// pings the other, and how long it waits for the answer: a worker cut
// off from its supervisor sees its connection close within about twice
// this, and stops as a worker whose host is lost.
const remoteKeepalive = 2 * time.Second

// handshakeTimeout bounds one TLS handshake on a worker's listener.
const handshakeTimeout = 10 * time.Second

// Identity is an ephemeral TLS key pair and its self-signed certificate,
// made in memory for one process (a supervisor's run, a worker's life)
// and never written anywhere. Its Hash is what the other end pins.
type Identity struct {
	cert tls.Certificate
	hash string
}

// NewIdentity makes an ECDSA P-256 key pair and a self-signed certificate
// for it.
func NewIdentity() (*Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("make a TLS certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "ink"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"ink-worker"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make a TLS certificate: %w", err)
	}
	return &Identity{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, hash: certHash(der)}, nil
}

// Hash is the hex SHA-256 of the identity's certificate (DER).
func (id *Identity) Hash() string { return id.hash }

func certHash(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// pinned returns a VerifyPeerCertificate that accepts exactly the leaf
// certificate whose SHA-256 is want.
func pinned(want, who string) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return fmt.Errorf("the %s presented no certificate", who)
		}
		if got := certHash(raw[0]); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return fmt.Errorf("the %s's certificate is %s, not the pinned %s", who, got, want)
		}
		return nil
	}
}

// ValidCertHash reports whether h looks like a hex SHA-256.
func ValidCertHash(h string) bool {
	b, err := hex.DecodeString(h)
	return err == nil && len(b) == sha256.Size
}

// ListenGreeting is what a listening remote worker announces on its first
// output line: its protocol and ink version (checked by
// ParseListenGreeting), the SHA-256 of its certificate and the address
// it listens on.
type ListenGreeting struct {
	Cert string
	Addr string
}

// ParseListenGreeting reads a listening worker's first output line:
// "ink-worker-remote PROTOCOL VERSION cert=HEX listen=ADDR". A worker of
// another protocol or ink version is refused (*ProtocolMismatchError,
// *VersionMismatchError).
func ParseListenGreeting(line string) (ListenGreeting, error) {
	line = strings.TrimSpace(line)
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != remoteGreeting {
		return ListenGreeting{}, fmt.Errorf("the worker's first output line was %q, not a listening ink worker's greeting: the container must run `ink worker --remote --listen ADDR`", clip(line))
	}
	if err := checkGreeting(strings.Join(f[:3], " ")); err != nil {
		return ListenGreeting{}, err
	}
	cert, ok1 := strings.CutPrefix(f[3], "cert=")
	addr, ok2 := strings.CutPrefix(f[4], "listen=")
	if !ok1 || !ok2 || !ValidCertHash(cert) {
		return ListenGreeting{}, fmt.Errorf("the worker's greeting %q names no certificate hash and address", clip(line))
	}
	return ListenGreeting{Cert: cert, Addr: addr}, nil
}

// ListenConfig says how a remote worker serves over the network.
type ListenConfig struct {
	// Addr is the TCP address to listen on (":7777", "127.0.0.1:0").
	Addr string
	// Supervisor is the hex SHA-256 of the one client certificate
	// accepted; every other client fails the TLS handshake.
	Supervisor string
	// Greet receives the greeting line (the process's standard output,
	// which pods/log reads).
	Greet io.Writer
}

// ServeListen serves h on a TCP listener with mutually pinned TLS 1.3,
// for `ink worker --remote --listen ADDR`: it makes the worker's own key
// pair, writes the greeting line (protocol, version, its certificate's
// hash, the address) to cfg.Greet, accepts the first client whose
// certificate hash is cfg.Supervisor, then stops listening. It returns as
// ServeRemote does: when the host is gone (its connection closed, or
// silent past the keepalive) and no Attempt handler runs, or when no
// host connected within a minute.
func ServeListen(h Handler, cfg ListenConfig, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if !ValidCertHash(cfg.Supervisor) {
		return fmt.Errorf("serve remote worker: %s is %q, not the hex SHA-256 of the supervisor's certificate", SupervisorCertEnv, cfg.Supervisor)
	}
	return serveListen(h, cfg, logger, defaultConnectTimeout)
}

func serveListen(h Handler, cfg ListenConfig, logger *slog.Logger, connectTimeout time.Duration) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	id, err := NewIdentity()
	if err != nil {
		return fmt.Errorf("serve remote worker: %w", err)
	}
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve remote worker: %w", err)
	}
	tlsCfg := &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{id.cert},
		ClientAuth:            tls.RequireAnyClientCert,
		VerifyPeerCertificate: pinned(cfg.Supervisor, "supervisor"),
	}
	lis := &pinnedListener{tcp: tcp, cfg: tlsCfg, log: logger, closed: make(chan struct{})}
	if _, err := fmt.Fprintf(cfg.Greet, "%s %d %s cert=%s listen=%s\n", remoteGreeting, ProtocolVersion, version.Ink, id.Hash(), tcp.Addr()); err != nil {
		_ = tcp.Close()
		return fmt.Errorf("serve remote worker: greet the host: %w", err)
	}
	return serveOn(h, lis, logger, connectTimeout,
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: remoteKeepalive, Timeout: remoteKeepalive}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: remoteKeepalive / 2, PermitWithoutStream: true}))
}

// pinnedListener hands out the first TCP connection whose TLS handshake
// passes (the pinned supervisor), drops every other, and stops listening
// once it has handed one out: a worker serves one host.
type pinnedListener struct {
	tcp    net.Listener
	cfg    *tls.Config
	log    *slog.Logger
	once   sync.Once
	gave   bool
	closed chan struct{}
}

func (l *pinnedListener) Accept() (net.Conn, error) {
	if l.gave {
		<-l.closed
		return nil, net.ErrClosed
	}
	for {
		raw, err := l.tcp.Accept()
		if err != nil {
			return nil, err
		}
		conn := tls.Server(raw, l.cfg)
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err = conn.HandshakeContext(ctx)
		cancel()
		if err != nil {
			l.log.Warn("refused a connection that is not the supervisor's", "from", raw.RemoteAddr().String(), "err", err)
			_ = raw.Close()
			continue
		}
		l.gave = true
		_ = l.tcp.Close()
		return conn, nil
	}
}

func (l *pinnedListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.tcp.Close()
}

func (l *pinnedListener) Addr() net.Addr { return l.tcp.Addr() }

// DialConfig says how to reach a listening remote worker.
type DialConfig struct {
	// Dial opens the raw connection to the worker: TCP to its address, or
	// a stream through a proxy (a Kubernetes port-forward).
	Dial func(ctx context.Context) (net.Conn, error)
	// Identity is the supervisor's own: the worker accepts it by its hash.
	Identity *Identity
	// Worker is the hex SHA-256 the worker announced in its greeting.
	Worker string
	// StartTimeout bounds the handshake and the Info call; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
}

// DialRemote connects to a listening remote worker with mutually pinned
// TLS 1.3 (each end accepts only the other's certificate hash), speaks
// gRPC with keepalive, and calls Info, refusing another protocol. The
// greeting's version was checked by ParseListenGreeting. On error nothing
// is left open; the caller must call Kill or Shutdown when done with the
// client.
func DialRemote(ctx context.Context, cfg DialConfig) (*RemoteClient, error) {
	if cfg.Identity == nil || !ValidCertHash(cfg.Worker) {
		return nil, errors.New("dial remote worker: the supervisor's identity and the worker's certificate hash are required")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	raw, err := cfg.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial remote worker: %w", err)
	}
	conn := tls.Client(raw, &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cfg.Identity.cert},
		// The worker's certificate is self-signed: it is trusted by its
		// pinned hash, which VerifyPeerCertificate checks, not by a CA.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: pinned(cfg.Worker, "worker"),
	})
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("dial remote worker: TLS: %w", err)
	}
	c := &RemoteClient{stream: conn, exited: make(chan struct{})}
	// Not WaitForReady: the connection is dialed once, so a worker that
	// refused it (TLS 1.3 reports a refused client certificate after the
	// client's handshake) fails Info at once instead of at the timeout.
	if err := c.connect(ctx, conn, "dialed", false, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: remoteKeepalive, Timeout: remoteKeepalive, PermitWithoutStream: true})); err != nil {
		return nil, err
	}
	return c, nil
}

// PortOf returns the port of a listen address ("[::]:7777" → 7777).
func PortOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}
