// Package ipc owns the wire between the ink orchestrator (the host) and an
// ink worker process: the protobuf service in worker.proto and its generated
// code in ipc/internal/pb, the go-plugin handshake, and the glue on both ends.
// Nothing else in ink imports go-plugin.
//
// # Host side
//
// [Start] launches `ink worker` (any command the caller builds) in its own
// session, hands it only the environment the caller allowed plus what
// go-plugin needs, waits for the handshake, and checks that the worker speaks
// [ProtocolVersion]. The returned [Client] opens one bidirectional
// [Client.Attempt] stream per attempt and [Client.Kill]s the worker and its
// whole process group when done.
//
// The transport is go-plugin's Unix socket, over gRPC only, without AutoMTLS
// and without a GRPCBroker. The socket lives in a fresh 0700 directory inside
// the caller's socket directory ($INK_HOME/run, itself 0700 and owned by the
// current user): the directory permissions are the security boundary. When
// that path would make the socket path longer than Unix allows, a fresh 0700
// directory under the system temp dir is used instead and removed on Kill.
//
// # Worker side
//
// [Serve] serves a [Handler] and answers Info itself. It never writes to the
// process's stdout or stderr after the handshake: go-plugin's logs, the
// standard log package and any stray print go to the logger given to Serve.
// Serve returns when the host is gone (it shut the worker down, or its
// connection closed) and no Attempt handler is still running; the caller then
// exits the process.
//
// # Workers behind a command
//
// [StartExec] runs a launch command with /bin/sh -c (ssh, docker run -i, or
// anything that ends in `ink worker --remote`) and speaks to the worker over
// the command's standard input and output, with no go-plugin and no socket:
// [ServeRemote], on the worker's side, first moves the stream off
// descriptors 0 and 1 (so nothing printed can corrupt it), writes one
// greeting line naming its protocol and ink version, and then serves the
// same Worker service as [Serve] on that stream. The host refuses a worker
// of another protocol (*[ProtocolMismatchError]) or another ink version
// (*[VersionMismatchError]) before any attempt, and a command that prints
// anything else first. The worker stops when its stream closes and no
// attempt runs, as a local worker stops when its host is gone.
//
// # Workers dialed over the network
//
// [ServeListen] serves the same Worker service on a TCP listener, for a
// worker in a container (a Kubernetes pod) that the host dials: the worker
// makes an ephemeral key ([NewIdentity]), writes a greeting line with its
// protocol, version, certificate hash and address to its output (which
// the host reads through the pod's log: [ParseListenGreeting]), and
// accepts one TLS 1.3 client, the one whose certificate hash
// [SupervisorCertEnv] names. [DialRemote] is the host's side: it pins the
// worker's hash, presents its own identity and calls Info. Both ends keep
// the connection alive with gRPC keepalive, so a worker whose host froze
// or vanished stops within seconds.
//
// # Heartbeats
//
// [Client.Beats] opens the worker's Beats stream, a server stream of its
// own beside the Attempt stream, so that no attempt message can delay a
// beat. The worker sends a [Heartbeat] at once and then one per interval
// the host asked for ([DefaultBeatInterval] when none), carrying its
// attempt's progress when its [Handler] is a [Progressor]. The host judges
// the worker's liveness from them (package orchestrator); a beat stream
// does not keep [Serve] from returning.
//
// # Messages
//
// The host sends Run, then Cancel, TaskAnswer and finally Ack; the worker
// sends numbered Events, TaskRequests and one Outcome (messages.go). A
// TaskRequest's Op says what the worker's agent asks about its children: a
// task call (the child's answer, or at once for a background child), their
// status, a wait for background children (the answer carries the TaskRecords
// it collects), a cancel, or which background children it must still
// collect before it ends. A Cancel whose status is interrupted stops the
// worker as host lost, as if its supervisor had died.
//
// Statuses, refusal codes and caps are session.Status, session.Code and
// session.Cap in Go and the enums Status, RefusalCode and Cap on the wire
// (protocol 5); convert.go maps them, refuses to send one a message may
// not carry, and answers an unspecified or unknown value with an error,
// never a guess. A refused Outcome carries its Code beside its Reason.
//
// # Regenerating ipc/internal/pb
//
// `go generate ./ipc` runs protoc over worker.proto. It needs:
//
//	apt-get install -y protobuf-compiler        # protoc 3.21 or later
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
//
// with $(go env GOPATH)/bin on PATH. The generated files are committed.
package ipc
