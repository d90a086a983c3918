package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// recordingRunner is a TaskRunner that records its calls and answers with
// a fixed Result.
type recordingRunner struct {
	mu    sync.Mutex
	calls []recordedTask
}

type recordedTask struct {
	callID string
	args   string
}

var _ TaskRunner = (*recordingRunner)(nil)

func (r *recordingRunner) RunTask(ctx context.Context, callID string, args json.RawMessage) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recordedTask{callID: callID, args: string(args)})
	return Result{Content: "child says hi", Record: json.RawMessage(`{"version":1}`)}
}

func TestTaskValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string // "" = valid, forwarded to the runner
	}{
		{"prompt only", `{"prompt":"look around"}`, ""},
		{"every new-child field", `{"prompt":"p","agent":"scout","timeoutMs":1000,"worktree":true}`, ""},
		{"worktree false", `{"prompt":"p","worktree":false}`, ""},
		{"large integer timeout", `{"prompt":"p","timeoutMs":3600000}`, ""},
		{"integral float timeout", `{"prompt":"p","timeoutMs":2000.0}`, ""},
		{"resume with prompt", `{"prompt":"go on","resume":"01jd8x7k2m-child"}`, ""},
		{"resume with timeout", `{"prompt":"go on","resume":"abc123","timeoutMs":5000}`, ""},
		{"null optional fields", `{"prompt":"p","agent":null,"timeoutMs":null,"worktree":null}`, ""},

		{"no prompt", `{"agent":"scout"}`, "prompt is required"},
		{"null prompt", `{"prompt":null}`, "prompt is required"},
		{"blank prompt", `{"prompt":"  \n\t"}`, "prompt is blank"},
		{"prompt not a string", `{"prompt":42}`, "prompt must be a string"},
		{"agent not a string", `{"prompt":"p","agent":7}`, "agent must be a string"},
		{"blank agent", `{"prompt":"p","agent":" "}`, "agent is blank"},
		{"timeout 999", `{"prompt":"p","timeoutMs":999}`, "timeoutMs must be a whole number of milliseconds, at least 1000"},
		{"timeout zero", `{"prompt":"p","timeoutMs":0}`, "timeoutMs must be a whole number of milliseconds, at least 1000"},
		{"negative timeout", `{"prompt":"p","timeoutMs":-5000}`, "timeoutMs must be a whole number of milliseconds, at least 1000"},
		{"fractional timeout", `{"prompt":"p","timeoutMs":1.5}`, "timeoutMs must be a whole number of milliseconds"},
		{"fractional timeout above the minimum", `{"prompt":"p","timeoutMs":1500.5}`, "timeoutMs must be a whole number"},
		{"timeout as a string", `{"prompt":"p","timeoutMs":"2000"}`, `timeoutMs must be a whole number of milliseconds, at least 1000 (one second) and at most 9223372036854; got "2000"`},
		{"timeout as a bool", `{"prompt":"p","timeoutMs":true}`, "timeoutMs must be a whole number"},
		{"huge timeout", `{"prompt":"p","timeoutMs":1e300}`, "timeoutMs must be a whole number"},
		{"worktree as a string", `{"prompt":"p","worktree":"yes"}`, "worktree must be true or false"},
		{"resume with agent", `{"prompt":"p","resume":"abc","agent":"scout"}`, "agent cannot be given with resume"},
		{"resume with worktree false", `{"prompt":"p","resume":"abc","worktree":false}`, "worktree cannot be given with resume"},
		{"resume with null agent", `{"prompt":"p","resume":"abc","agent":null}`, "agent cannot be given with resume"},
		{"resume with both", `{"prompt":"p","resume":"abc","agent":"a","worktree":true}`, "agent and worktree cannot be given with resume"},
		{"resume without prompt", `{"resume":"abc"}`, "prompt is required"},
		{"blank resume", `{"prompt":"p","resume":""}`, "resume is blank"},
		{"resume not a string", `{"prompt":"p","resume":12}`, "resume must be a string"},
		{"resume null", `{"prompt":"p","resume":null}`, "resume must be a string"},
		{"resume with a slash", `{"prompt":"p","resume":"a/b"}`, "is not a child session id"},
		{"resume with dot-dot", `{"prompt":"p","resume":".."}`, "never paths"},
		{"resume uppercase", `{"prompt":"p","resume":"ABC"}`, "is not a child session id"},
		{"unknown field", `{"prompt":"p","model":"x"}`, `unknown argument "model"; task takes: prompt, agent, timeoutMs, worktree, resume, background`},
		{"background", `{"prompt":"p","background":true}`, ""},
		{"background resume", `{"prompt":"p","resume":"abc","background":true}`, ""},
		{"background not a bool", `{"prompt":"p","background":1}`, "background must be true or false"},
		{"not an object", `["p"]`, "the arguments must be a JSON object"},
		{"empty arguments", ``, "the arguments must be a JSON object"},
		{"broken JSON", `{"prompt":`, "the arguments must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runner := &recordingRunner{}
			tool := NewTask(runner)
			ctx := WithCallID(context.Background(), "call-7")
			r := tool.Run(ctx, json.RawMessage(tc.args))
			if tc.want != "" {
				wantError(t, r, "task: ", tc.want)
				if len(runner.calls) != 0 {
					t.Fatalf("runner was called with bad arguments: %+v", runner.calls)
				}
				return
			}
			wantOK(t, r)
			if r.Content != "child says hi" || string(r.Record) != `{"version":1}` {
				t.Fatalf("runner result not passed through: %+v", r)
			}
			if len(runner.calls) != 1 || runner.calls[0].callID != "call-7" || runner.calls[0].args != tc.args {
				t.Fatalf("runner calls = %+v, want one with call-7 and the arguments", runner.calls)
			}
		})
	}
}

func TestTaskSpec(t *testing.T) {
	t.Parallel()
	tool := NewTask(&recordingRunner{})
	if !tool.Safe() {
		t.Fatal("task must be safe to run in parallel")
	}
	spec := tool.Spec()
	if spec.Name != "task" {
		t.Fatalf("name = %q", spec.Name)
	}
	for _, w := range []string{"parallel", "resume", "worktree", "background", "task_wait"} {
		if !strings.Contains(spec.Description, w) {
			t.Errorf("description does not explain %s", w)
		}
	}
	checkSchema(t, spec.Schema, []string{"prompt", "agent", "timeoutMs", "worktree", "resume", "background"}, []string{"prompt"})
}
