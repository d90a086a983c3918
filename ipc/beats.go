package ipc

import (
	"context"
	"fmt"
	"time"

	"github.com/inkdev/ink/ipc/internal/pb"
)

// DefaultBeatInterval is how often a worker beats when the host asks for
// no interval of its own: the lease's heartbeat interval.
const DefaultBeatInterval = time.Second

// minBeatInterval bounds how often a host may ask a worker to beat.
const minBeatInterval = 10 * time.Millisecond

// Heartbeat is one beat of a live worker on its Beats stream. ProgressSeq
// is its attempt's progress sequence (the lease's): it grows with each
// step of the attempt and stays put while the attempt waits.
type Heartbeat struct {
	ProgressSeq int64
}

// Progressor is what a Handler may also implement to put its attempt's
// progress into the heartbeats: ProgressSeq must be cheap and safe for
// concurrent use.
type Progressor interface {
	ProgressSeq() int64
}

// Beats opens the worker's heartbeat stream, asking for one beat every
// interval (DefaultBeatInterval when 0), on an HTTP/2 stream of its own so
// that no message of the attempt stream delays a beat. The returned
// channel receives the beats; it holds at most the latest one not yet
// received (a beat is a sign of life, not a count) and is closed when the
// stream ends: ctx cancelled, the worker gone or shut down. The caller
// cancels ctx when done.
func (c *Client) Beats(ctx context.Context, interval time.Duration) (<-chan Heartbeat, error) {
	out, err := openBeats(ctx, c.worker, interval)
	if err != nil {
		return nil, fmt.Errorf("worker %d heartbeats: %w", c.Pid(), err)
	}
	return out, nil
}

// Beats opens the remote worker's heartbeat stream, as Client.Beats does.
func (c *RemoteClient) Beats(ctx context.Context, interval time.Duration) (<-chan Heartbeat, error) {
	out, err := openBeats(ctx, c.worker, interval)
	if err != nil {
		return nil, fmt.Errorf("remote worker heartbeats: %w", err)
	}
	return out, nil
}

// openBeats opens a worker's Beats stream and passes its beats on, the
// latest one kept, until the stream ends.
func openBeats(ctx context.Context, worker pb.WorkerClient, interval time.Duration) (<-chan Heartbeat, error) {
	stream, err := worker.Beats(ctx, &pb.BeatsRequest{IntervalMs: interval.Milliseconds()})
	if err != nil {
		return nil, err
	}
	out := make(chan Heartbeat, 1)
	go func() {
		defer close(out)
		for {
			hb, err := stream.Recv()
			if err != nil {
				return
			}
			latest(out, Heartbeat{ProgressSeq: hb.GetProgressSeq()})
		}
	}()
	return out, nil
}

// latest puts hb into ch (capacity 1), replacing a beat not yet received,
// so that the sender never blocks on a slow receiver.
func latest(ch chan Heartbeat, hb Heartbeat) {
	for {
		select {
		case ch <- hb:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// beatInterval is the interval a BeatsRequest asks for, bounded below.
func beatInterval(req *pb.BeatsRequest) time.Duration {
	d := time.Duration(req.GetIntervalMs()) * time.Millisecond
	if d <= 0 {
		return DefaultBeatInterval
	}
	return max(d, minBeatInterval)
}

// Beats sends one heartbeat at once and then one every interval the host
// asked for, until the host ends the stream or the worker shuts down. A
// beat carries the handler's progress when it is a Progressor. The stream
// does not count as a running attempt: it never keeps Serve from
// returning.
func (s *workerServer) Beats(req *pb.BeatsRequest, stream pb.Worker_BeatsServer) error {
	s.stdio.redirect()
	progress := func() int64 { return 0 }
	if p, ok := s.handler.(Progressor); ok {
		progress = p.ProgressSeq
	}
	t := time.NewTicker(beatInterval(req))
	defer t.Stop()
	for {
		if err := stream.Send(&pb.Heartbeat{ProgressSeq: progress()}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-t.C:
		}
	}
}
