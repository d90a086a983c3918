package loop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/inkdev/ink/loop"
)

// BenchmarkRun measures the loop's own cost: three scripted turns, the
// first fanning out 8 safe calls of a tool that returns at once.
func BenchmarkRun(b *testing.B) {
	var calls []string
	for i := range 8 {
		calls = append(calls, fmt.Sprintf("{tool: read, args: {label: r%d, ms: 0}}", i))
	}
	prov := parseScript(b, fmt.Sprintf(`
rules:
  - when: {turn: 1}
    reply: {calls: [%s]}
  - when: {turn: 2}
    reply: {calls: [{tool: read, args: {label: last, ms: 0}}]}
  - reply: {text: done}
`, strings.Join(calls, ", ")))
	var s sink
	opts := s.options(prov, &sleepTool{name: "read", safe: true, rec: newRecorder()})
	opts.OnMessage, opts.OnEvent = nil, nil
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loop.Run(context.Background(), opts); err != nil {
			b.Fatal(err)
		}
	}
}
