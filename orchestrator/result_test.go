package orchestrator

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

func TestTruncateTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		in          string
		max         int
		wantDropped int
	}{
		{"short", "hello", 10, 0},
		{"exact", "hello", 5, 0},
		{"ascii", "abcdefghij", 4, 6},
		// "日本語" is 9 bytes; keeping 4 would split a rune, so 3 are kept.
		{"cjk boundary", "日本語", 4, 6},
		{"emoji boundary", "a😀b😀", 6, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dropped := truncateTail(tt.in, tt.max)
			if dropped != tt.wantDropped {
				t.Fatalf("dropped %d, want %d", dropped, tt.wantDropped)
			}
			if !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
				t.Fatalf("tail %q is not valid UTF-8", got)
			}
			if !strings.HasSuffix(tt.in, got) || len(got) > tt.max || len(got)+dropped != len(tt.in) {
				t.Fatalf("tail %q of %q (max %d) is wrong", got, tt.in, tt.max)
			}
		})
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 950: "950", 1000: "1k", 1400: "1.4k", 9999: "10k", 12345: "12k", 999_499: "999k", 2_100_000: "2.1M"} {
		if got := CompactTokens(n); got != want {
			t.Errorf("CompactTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestComposeResult(t *testing.T) {
	t.Parallel()
	u := model.Usage{Input: 12000, Output: 1400}
	long := strings.Repeat("x", 60*1024+11)
	tests := []struct {
		name      string
		in        resultInput
		wantError bool
		want      []string
		notWant   []string
	}{
		{
			name:    "completed with text",
			in:      resultInput{Status: "completed", Text: "the answer", Turns: 3, Usage: u, ChildID: "c1", Transcript: "/t/c1.jsonl", Prompt: "p"},
			want:    []string{"the answer", "(child: 3 turns, 12k in / 1.4k out)", `child session id: c1 — continue it with task({resume: "c1"`},
			notWant: []string{"work is preserved", "the child's task was"},
		},
		{
			name: "completed without text",
			in:   resultInput{Status: "completed", Turns: 1, ChildID: "c1", Transcript: "/t/c1.jsonl"},
			want: []string{"(subagent completed with no output)"},
		},
		{
			name:      "timeout is an error with a handoff",
			in:        resultInput{Status: "timeout", Turns: 2, Usage: u, Timeout: "2s", ChildID: "c1", Transcript: "/t/c1.jsonl", Prompt: "find the bug"},
			wantError: true,
			want:      []string{"task timed out after 2s (2 turns ran).", "work is preserved in the full transcript:\n  /t/c1.jsonl", `the child's task was: "find the bug"`, "child session id: c1"},
		},
		{
			name:      "aborted",
			in:        resultInput{Status: "aborted", Reason: "cancelled by the user", ChildID: "c1", Transcript: "/t/c1.jsonl"},
			wantError: true,
			want:      []string{"task aborted before completion (0 turns ran): cancelled by the user."},
		},
		{
			name:      "crash without text",
			in:        resultInput{Status: "crash", Reason: "the worker process (pid 9) was killed by signal SIGKILL", Turns: 1, ChildID: "c1"},
			wantError: true,
			want:      []string{"task failed after 1 turn: the worker process (pid 9) was killed by signal SIGKILL.", "(transcript not persisted — work was not saved)"},
			notWant:   []string{"child session id"},
		},
		{
			name: "crash with text keeps it",
			in:   resultInput{Status: "crash", Reason: "stream cut", Text: "half an answer", Turns: 2, ChildID: "c1", Transcript: "/t/c1.jsonl"},
			want: []string{"half an answer", "[task] child failed after 2 turns: stream cut; partial result above.", "work is preserved"},
		},
		{
			name:    "long text is tail-truncated with a header",
			in:      resultInput{Status: "completed", Text: "HEAD" + long + "TAIL", ChildID: "c1"},
			want:    []string{"[task] result truncated to its last 50KB (dropped 10259 bytes)", "TAIL"},
			notWant: []string{"HEAD"},
		},
		{
			name: "incomplete usage",
			in:   resultInput{Status: "completed", Text: "t", Usage: model.Usage{Input: 10, Output: 2, CacheRead: 9800, Incomplete: true}},
			want: []string{"(child: 0 turns, ≥10 in / ≥2 out / 9.8k cache)"},
		},
		{
			name:      "prompt excerpt is 200 code points",
			in:        resultInput{Status: "aborted", Prompt: strings.Repeat("é", 201)},
			wantError: true,
			want:      []string{`"` + strings.Repeat("é", 200) + `…"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := composeResult(tt.in)
			if isErr != tt.wantError {
				t.Fatalf("isError = %v, want %v\n%s", isErr, tt.wantError, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q:\n%s", w, FirstRunes(got, 400))
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("result has %q:\n%s", w, FirstRunes(got, 400))
				}
			}
		})
	}
}
