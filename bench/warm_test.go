package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// warmChildren is how many children one run of BenchmarkWarmChild starts,
// one after the other.
const warmChildren = 5

// warmScript is a main agent that waits, calls task, and does so again
// after each child, leaving the supervisor time to refill its pool; every
// child answers in one turn.
func warmScript() string { return pacedScript("400ms", "150ms") }

// pacedScript is a main agent whose model answers its first request
// after first and every later one after between, each answer a task call
// until warmChildren children ran; every child answers in one turn.
func pacedScript(first, between string) string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := 1; i <= warmChildren; i++ {
		delay := between
		if i == 1 {
			delay = first
		}
		fmt.Fprintf(&b, "  - when: {depth: 0, turn: %d}\n    reply: {delay: %s, calls: [{tool: task, args: {prompt: \"child %d\"}}]}\n", i, delay, i)
	}
	b.WriteString("  - when: {depth: 0}\n    reply: {text: \"all children answered\"}\n")
	b.WriteString("  - when: {depth: 1}\n    reply: {text: \"child report\"}\n")
	return b.String()
}

// BenchmarkWarmBackToBack is BenchmarkWarmChild at the pace of a fast
// caller: the main agent's model answers every request at once, each
// answer a task call, so each child's task call follows the previous
// child's end with nothing between. The pool has no model turn to start
// its first worker behind, so the first child is cold; what is measured
// is every child after the first, from its task call to its first model
// request, beside the floor "hello". One op is one child.
func BenchmarkWarmBackToBack(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	script := h.write(b, "backtoback.yaml", pacedScript("0s", "0s"))
	var worst time.Duration
	pairedMeasure(b, func(b *testing.B) []time.Duration {
		out, err := h.command(bin, "run", "--json", "--model", "script:"+script, "start children").Output()
		if err != nil {
			b.Fatalf("ink run: %v\n%s", err, out)
		}
		lat, err := childLatencies(string(out))
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range lat[1:] {
			worst = max(worst, d)
		}
		return lat[1:]
	}, helloFloor(10))
	b.ReportMetric(float64(worst), "max-ns")
}

// BenchmarkWarmChild measures the common case: a child started by a
// running `ink run`, from its task call (the main agent's tool.start of
// `task`) to the child's first model request (its turn.start), both as the
// supervisor's event stream times them. The supervisor keeps warm workers,
// so the child skips the process start; what remains is sending the
// attempt, the worker's lease and transcript with their syncs, its tools
// and provider. The floor "hello" is a fork/exec of a Go program that does
// nothing, run beside each run of ink. One op is one child.
func BenchmarkWarmChild(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	script := h.write(b, "warm.yaml", warmScript())
	pairedMeasure(b, func(b *testing.B) []time.Duration {
		out, err := h.command(bin, "run", "--json", "--model", "script:"+script, "start children").Output()
		if err != nil {
			b.Fatalf("ink run: %v\n%s", err, out)
		}
		lat, err := childLatencies(string(out))
		if err != nil {
			b.Fatal(err)
		}
		return lat
	}, helloFloor(10))
}

// childLatencies pairs each task call of the main agent with the first
// model turn of the child it started, in order, from a --json stream.
func childLatencies(stream string) ([]time.Duration, error) {
	var calls []time.Time
	first := map[string]time.Time{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Type  string    `json:"type"`
			Agent string    `json:"agent"`
			Time  time.Time `json:"time"`
			Name  string    `json:"name"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("event %q: %v", sc.Text(), err)
		}
		switch {
		case e.Type == "tool.start" && e.Agent == "main" && e.Name == "task":
			calls = append(calls, e.Time)
		case e.Type == "turn.start" && e.Agent != "main":
			if _, seen := first[e.Agent]; !seen {
				first[e.Agent] = e.Time
				order = append(order, e.Agent)
			}
		}
	}
	if len(calls) != warmChildren || len(order) != warmChildren {
		return nil, fmt.Errorf("%d task calls and %d children's turns, want %d of each:\n%s", len(calls), len(order), warmChildren, stream)
	}
	var out []time.Duration
	for i, agent := range order {
		out = append(out, first[agent].Sub(calls[i]))
	}
	return out, nil
}
