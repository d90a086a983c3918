package orchestrator

import (
	"encoding/json"
	"time"
)

// Event is one line of the `--json` stream (DESIGN.md §10) and the input of
// the human display. Fields holds the type-specific members, flattened into
// the JSON object beside the common ones.
type Event struct {
	Seq     uint64
	Time    time.Time
	Agent   string // display label: "main", "main/2", "main/2/1"
	Session string // session id of the agent the event is about
	Type    string
	Fields  map[string]any
}

// MarshalJSON renders {"v":1,"seq":…,"time":…,"agent":…,"session":…,"type":…, …fields}.
func (e Event) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Fields)+6)
	for k, v := range e.Fields {
		m[k] = v
	}
	m["v"] = 1
	m["seq"] = e.Seq
	m["time"] = e.Time.UTC().Format(time.RFC3339Nano)
	m["agent"] = e.Agent
	m["session"] = e.Session
	m["type"] = e.Type
	return json.Marshal(m)
}

// emit numbers an event and hands it to the sink. Safe for concurrent use.
func (o *Orchestrator) emit(agent, sessionID, typ string, fields map[string]any) {
	if o.cfg.Sink == nil {
		return
	}
	o.sinkMu.Lock()
	defer o.sinkMu.Unlock()
	o.seq++
	o.cfg.Sink(Event{Seq: o.seq, Time: time.Now(), Agent: agent, Session: sessionID, Type: typ, Fields: fields})
}

// Warn emits a warning event not tied to one agent (profile reload
// problems, for instance). Safe for concurrent use.
func (o *Orchestrator) Warn(agent, text string) {
	o.emit(agent, "", "warning", map[string]any{"text": text})
}
