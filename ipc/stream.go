package ipc

import (
	"context"
	"sync"

	"github.com/inkdev/ink/ipc/internal/pb"
)

// HostStream is the host's end of one attempt stream. Send and CloseSend
// are safe for concurrent use; Recv must be called from one goroutine at a
// time.
type HostStream struct {
	mu sync.Mutex
	s  pb.Worker_AttemptClient
}

// Send sends one message to the worker.
func (h *HostStream) Send(m HostMsg) error {
	p, err := hostToPB(m)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s.Send(p)
}

// Recv receives the worker's next message. io.EOF means the worker ended
// the stream normally.
func (h *HostStream) Recv() (WorkerMsg, error) {
	p, err := h.s.Recv()
	if err != nil {
		return nil, err
	}
	return workerFromPB(p)
}

// CloseSend tells the worker the host will send nothing more.
func (h *HostStream) CloseSend() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s.CloseSend()
}

// WorkerStream is the worker's end of one attempt stream. Send is safe for
// concurrent use; Recv must be called from one goroutine at a time.
type WorkerStream struct {
	mu sync.Mutex
	s  pb.Worker_AttemptServer
}

// Send sends one message to the host.
func (w *WorkerStream) Send(m WorkerMsg) error {
	p, err := workerToPB(m)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s.Send(p)
}

// Recv receives the host's next message. io.EOF means the host closed its
// side of the stream.
func (w *WorkerStream) Recv() (HostMsg, error) {
	p, err := w.s.Recv()
	if err != nil {
		return nil, err
	}
	return hostFromPB(p)
}

// Context is done when the host cancels the stream, shuts the worker down
// or is lost (its process died).
func (w *WorkerStream) Context() context.Context { return w.s.Context() }
