package console

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/rows")

// sampleRows are the rows of a run of four children, one with a long agent
// name in Japanese and English, one with an emoji in its name.
var sampleRows = []rowCells{
	{label: "main", state: "running", elapsed: "1m12s", turns: "2 turns", in: "3.4k", out: "210", tool: "task"},
	{label: "main/1", agent: "scout", state: "running", elapsed: "41s", turns: "1 turn", in: "900", out: "30", tool: "grep"},
	{label: "main/2", agent: "決済ゲートウェイ security reviewer for the payments team", state: "running", elapsed: "40s", turns: "3 turns", in: "12k", out: "1.4k", tool: "bash"},
	{label: "main/3", agent: "🔒 auditor", state: "running", elapsed: "3s", turns: "1 turn", in: "0", out: "0", tool: "web_fetch"},
	{label: "main/4", state: "queued", elapsed: "0s", turns: "0 turns", in: "0", out: "0"},
}

// TestLayoutRowsFit: at 120, 80 and 40 columns every row fits the width,
// counted in terminal cells (a CJK character or an emoji takes two), keeps
// its label and state, and shows the start of its agent name, cut with an
// ellipsis when it is too long; the narrower the terminal, the fewer
// details. The lines are those of testdata/rows/<width>.txt, each ended
// with a '|' (go test -update rewrites them).
func TestLayoutRowsFit(t *testing.T) {
	t.Parallel()
	for _, width := range []int{120, 80, 40} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			t.Parallel()
			lines := layoutRows(sampleRows, width)
			if len(lines) != len(sampleRows) {
				t.Fatalf("%d lines for %d rows", len(lines), len(sampleRows))
			}
			for i, l := range lines {
				r := sampleRows[i]
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("line %q takes %d cells, wider than %d", l, w, width)
				}
				state := strings.Index(l, " "+r.state+" ")
				if !strings.HasPrefix(l, "  "+r.label+" ") || state < 0 {
					t.Errorf("line %q lacks the label %q or the state %q", l, r.label, r.state)
					continue
				}
				agent := strings.TrimSpace(l[len("  "+r.label):state])
				if cut, ok := strings.CutSuffix(agent, "…"); agent != r.agent && (!ok || cut == "" || !strings.HasPrefix(r.agent, cut)) {
					t.Errorf("line %q shows %q for the agent name %q, neither it whole nor its start and an ellipsis", l, agent, r.agent)
				}
			}
			golden := filepath.Join("testdata", "rows", strconv.Itoa(width)+".txt")
			var got strings.Builder
			for _, l := range lines {
				got.WriteString(l + "|\n") // where the line ends, its spaces included
			}
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run go test -update to create it): %v", err)
			}
			if got.String() != string(want) {
				t.Errorf("rows at %d columns:\n%s\nwant (%s):\n%s", width, got.String(), golden, want)
			}
		})
	}
}

// TestLayoutRowsGiveWay: what gives way as the terminal narrows: the tool
// is cut short, then the agent name (to 8 cells), then the tool, the
// tokens, the turns and the elapsed time go in that order, the agent name
// last; the label and the state stay to the end.
func TestLayoutRowsGiveWay(t *testing.T) {
	t.Parallel()
	rows := []rowCells{{label: "main/1", agent: "a-rather-long-agent-name", state: "running", elapsed: "12s", turns: "3 turns", in: "12k", out: "1.4k", tool: "web_fetch"}}
	for _, tc := range []struct {
		width int
		want  string
	}{
		{200, "  main/1 a-rather-long-agent-name running 12s  3 turns  12k in / 1.4k out  web_fetch"},
		{80, "  main/1 a-rather-long-agent-name running 12s  3 turns  12k in / 1.4k out  web_…"},
		{72, "  main/1 a-rather-long-ag… running 12s  3 turns  12k in / 1.4k out  web…"},
		{60, "  main/1 a-rather-l… running 12s  3 turns  12k in / 1.4k out"},
		{50, "  main/1 a-rather-long-agent… running 12s  3 turns"},
		{40, "  main/1 a-rather-… running 12s  3 turns"},
		{32, "  main/1 a-rather-l… running 12s"},
		{25, "  main/1 a-rathe… running"},
		{18, "  main/1 running"},
		{12, "  main/1 ru…"},
	} {
		got := layoutRows(rows, tc.width)[0]
		if got != tc.want {
			t.Errorf("at %d columns:\n got %q\nwant %q", tc.width, got, tc.want)
		}
	}
}
