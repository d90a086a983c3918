package mcpserver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
)

// progressEvery bounds how often one call sends progress notifications.
const progressEvery = 250 * time.Millisecond

// progress sends MCP progress notifications about the children of one tool
// call, when the client asked for them with a progress token. Updates come
// from the supervisor's goroutines and never block: the newest status of
// each child is kept and sent by one goroutine, at most every
// progressEvery. It is safe for concurrent use; stop sends what is left and
// ends it.
type progress struct {
	ss    *mcp.ServerSession
	token any

	mu     sync.Mutex
	latest map[string]orchestrator.ChildStatus
	dirty  bool
	kick   chan struct{}
	done   chan struct{}
	ended  chan struct{}
	sent   float64
}

// newProgress returns the progress of req's call, or nil when the client
// gave no progress token (a nil *progress accepts updates and does
// nothing).
func newProgress(req *mcp.CallToolRequest) *progress {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	p := &progress{ss: req.Session, token: token, latest: map[string]orchestrator.ChildStatus{},
		kick: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
	go p.loop()
	return p
}

// update takes a child's new status.
func (p *progress) update(st orchestrator.ChildStatus) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.latest[st.ID] = st
	p.dirty = true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// stop sends the last changes and ends the notifications.
func (p *progress) stop() {
	if p == nil {
		return
	}
	close(p.done)
	<-p.ended
}

func (p *progress) loop() {
	defer close(p.ended)
	for {
		select {
		case <-p.kick:
		case <-p.done:
			p.flush()
			return
		}
		p.flush()
		select {
		case <-time.After(progressEvery):
		case <-p.done:
			p.flush()
			return
		}
	}
}

// flush sends one notification with every child's newest status, if
// anything changed.
func (p *progress) flush() {
	p.mu.Lock()
	if !p.dirty {
		p.mu.Unlock()
		return
	}
	p.dirty = false
	list := make([]orchestrator.ChildStatus, 0, len(p.latest))
	for _, st := range p.latest {
		list = append(list, st)
	}
	p.sent++
	n := p.sent
	p.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].Label < list[j].Label })
	var lines []string
	for _, st := range list {
		lines = append(lines, progressLine(st))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: strings.Join(lines, "\n")})
}

// progressLine is one child's progress: "mcp/1 child 01k… (scout): turn 3,
// running bash, 12k in / 1.4k out".
func progressLine(st orchestrator.ChildStatus) string {
	who := fmt.Sprintf("%s child %s", st.Label, st.ID)
	if st.Agent != "" {
		who += " (" + st.Agent + ")"
	}
	tokens := fmt.Sprintf("%s in / %s out", orchestrator.CompactTokens(st.Usage.Input), orchestrator.CompactTokens(st.Usage.Output))
	switch st.State {
	case orchestrator.ChildEnded:
		return fmt.Sprintf("%s: %s after %s, %s", who, st.Status, orchestrator.Turns(st.Turns), tokens)
	case orchestrator.ChildRunning:
		s := fmt.Sprintf("%s: turn %d", who, st.Turns)
		if st.Tool != "" {
			s += ", running " + st.Tool
		}
		return s + ", " + tokens
	default:
		return fmt.Sprintf("%s: %s", who, st.State)
	}
}
