package orchestrator

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/inkdev/ink/event"
)

// publisher numbers events and hands them to the sink, one at a time. It is
// safe for concurrent use.
type publisher struct {
	mu       sync.Mutex
	seq      uint64
	sink     func(event.Envelope)
	rejected atomic.Int64
	tickets  atomic.Uint64
}

// emit publishes body as an event about the agent labelled agent, whose
// session is sessionID.
func (p *publisher) emit(agent, sessionID string, body event.Event) {
	p.publish(event.Envelope{Agent: agent, Session: sessionID, Body: body})
}

// publish numbers and times e and hands it to the sink.
func (p *publisher) publish(e event.Envelope) {
	if _, ok := e.Body.(event.TaskEnd); ok && e.Body.(event.TaskEnd).Status == StatusRejected {
		p.rejected.Add(1)
	}
	if p.sink == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	e.Seq, e.Time = p.seq, time.Now()
	p.sink(e)
}

// Warn emits a warning event not tied to one agent (profile reload
// problems, for instance). Safe for concurrent use.
func (o *Orchestrator) Warn(agent, text string) {
	o.pub.emit(agent, "", event.Warning{Text: text})
}

// ticket hands out the next place in the window's queue.
func (p *publisher) ticket() uint64 { return p.tickets.Add(1) }
