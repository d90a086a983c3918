package taskargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 72)
	for _, tc := range []struct {
		name, raw, refusal string
	}{
		{"prompt only", `{"prompt":"find the tests"}`, ""},
		{"every new-child field", `{"prompt":"p","agent":"scout","timeoutMs":1000,"worktree":true}`, ""},
		{"large timeout", `{"prompt":"p","timeoutMs":3600000}`, ""},
		{"whole float timeout", `{"prompt":"p","timeoutMs":2000.0}`, ""},
		{"exponent timeout", `{"prompt":"p","timeoutMs":1e3}`, ""},
		{"resume with timeout", `{"prompt":"go on","resume":"abc123","timeoutMs":5000}`, ""},
		{"null optional fields", `{"prompt":"p","agent":null,"timeoutMs":null,"worktree":null}`, ""},
		{"not an object", `["p"]`, "must be a JSON object"},
		{"empty", ``, "must be a JSON object"},
		{"unknown argument", `{"prompt":"go","bogus":1}`, `unknown argument "bogus"; task takes: prompt, agent`},
		{"missing prompt", `{}`, "prompt is required"},
		{"blank prompt", `{"prompt":"  \n\t"}`, "prompt is blank"},
		{"prompt not a string", `{"prompt":3}`, "prompt must be a string"},
		{"blank agent", `{"prompt":"p","agent":" "}`, "agent is blank"},
		{"agent not a string", `{"prompt":"p","agent":1}`, "agent must be a string"},
		{"timeout 999", `{"prompt":"p","timeoutMs":999}`, "timeoutMs must be a whole number of milliseconds, at least 1000"},
		{"timeout zero", `{"prompt":"p","timeoutMs":0}`, "at least 1000"},
		{"negative timeout", `{"prompt":"p","timeoutMs":-5000}`, "at least 1000"},
		{"fractional timeout", `{"prompt":"p","timeoutMs":1500.5}`, "whole number of milliseconds"},
		{"string timeout", `{"prompt":"p","timeoutMs":"2000"}`, "whole number of milliseconds"},
		{"huge timeout", `{"prompt":"p","timeoutMs":1e300}`, "at most 9223372036854"},
		{"worktree not a bool", `{"prompt":"p","worktree":"yes"}`, "worktree must be true or false"},
		{"resume with agent", `{"prompt":"go","resume":"01abc","agent":"x"}`, "agent cannot be given with resume"},
		{"resume with worktree", `{"prompt":"go","resume":"01abc","worktree":false}`, "worktree cannot be given with resume"},
		{"resume with null agent", `{"prompt":"go","resume":"01abc","agent":null}`, "agent cannot be given with resume"},
		{"resume path", `{"prompt":"go","resume":"../x"}`, "not a child session id (ids are lowercase letters, digits and -, never paths)"},
		{"resume slash", `{"prompt":"go","resume":"a/b"}`, "not a child session id"},
		{"resume upper case", `{"prompt":"go","resume":"ABC"}`, "not a child session id (ids are lowercase"},
		{"resume too long", `{"prompt":"go","resume":"` + long + `"}`, "it has 72 characters and ids have at most 64"},
		{"resume blank", `{"prompt":"go","resume":""}`, "resume is blank"},
		{"resume not a string", `{"prompt":"go","resume":12}`, "resume must be a string"},
		{"resume null", `{"prompt":"go","resume":null}`, "resume must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse(json.RawMessage(tc.raw))
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("Parse(%s) refused: %v", tc.raw, err)
				}
				if a.Prompt == "" {
					t.Fatalf("Parse(%s) lost the prompt", tc.raw)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.refusal) || !strings.HasPrefix(err.Error(), "task: ") {
				t.Fatalf("Parse(%s) = %v, want a task error containing %q", tc.raw, err, tc.refusal)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	a, err := Parse(json.RawMessage(`{"prompt":"p","agent":"scout","timeoutMs":6e4,"worktree":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if *a.Agent != "scout" || *a.TimeoutMs != 60000 || *a.Worktree || a.Resume != nil {
		t.Fatalf("Parse = %+v", a)
	}
	back, err := Parse(a.JSON())
	if err != nil || *back.TimeoutMs != 60000 || *back.Agent != "scout" {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

func TestParseBackground(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, raw, refusal string
		want               bool
	}{
		{"background", `{"prompt":"p","background":true}`, "", true},
		{"background false", `{"prompt":"p","background":false}`, "", false},
		{"background with resume", `{"prompt":"go on","resume":"01abc","background":true}`, "", true},
		{"background not a bool", `{"prompt":"p","background":"yes"}`, "background must be true or false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse(json.RawMessage(tc.raw))
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("Parse(%s) = %v, want %q", tc.raw, err, tc.refusal)
				}
				return
			}
			if err != nil || a.Background != tc.want {
				t.Fatalf("Parse(%s) = %+v, %v", tc.raw, a, err)
			}
		})
	}
}

func TestParseControls(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 72)
	for _, tc := range []struct {
		name    string
		parse   func(json.RawMessage) (any, error)
		raw     string
		refusal string
	}{
		{"status no args", status, ``, ""},
		{"status empty", status, `{}`, ""},
		{"status ids", status, `{"ids":["01abc","01abd"]}`, ""},
		{"status unknown", status, `{"id":"01abc"}`, `task_status: unknown argument "id"; task_status takes: ids`},
		{"status ids not a list", status, `{"ids":"01abc"}`, "task_status: ids must be a list of child session ids"},
		{"status path id", status, `{"ids":["../x"]}`, `task_status: ids: "../x" is not a child session id (ids are lowercase letters, digits and -, never paths)`},
		{"status long id", status, `{"ids":["` + long + `"]}`, "it has 72 characters and ids have at most 64"},
		{"status blank id", status, `{"ids":[" "]}`, "ids: a blank id"},
		{"status not an object", status, `[1]`, "task_status: the arguments must be a JSON object"},
		{"wait all", wait, `{}`, ""},
		{"wait ids and timeout", wait, `{"ids":["01abc"],"timeoutMs":5000}`, ""},
		{"wait zero timeout", wait, `{"timeoutMs":0}`, ""},
		{"wait negative timeout", wait, `{"timeoutMs":-1}`, "task_wait: timeoutMs must be a whole number of milliseconds, 0 or more"},
		{"wait fractional timeout", wait, `{"timeoutMs":1.5}`, "whole number"},
		{"wait string timeout", wait, `{"timeoutMs":"5s"}`, "whole number"},
		{"wait unknown", wait, `{"timeout":5}`, `task_wait: unknown argument "timeout"; task_wait takes: ids, timeoutMs`},
		{"cancel", cancel, `{"id":"01abc"}`, ""},
		{"cancel missing id", cancel, `{}`, "task_cancel: id is required"},
		{"cancel id not a string", cancel, `{"id":3}`, "task_cancel: id must be a string"},
		{"cancel bad id", cancel, `{"id":"A B"}`, `task_cancel: id: "A B" is not a child session id`},
		{"cancel ids", cancel, `{"ids":["01abc"]}`, `task_cancel: unknown argument "ids"; task_cancel takes: id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.parse(json.RawMessage(tc.raw))
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("refused %s: %v", tc.raw, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.refusal) {
				t.Fatalf("%s: got %v, want %q", tc.raw, err, tc.refusal)
			}
		})
	}
	w, err := ParseWait(json.RawMessage(`{"ids":["01abc","01abc","01abd"],"timeoutMs":2e3}`))
	if err != nil || strings.Join(w.IDs, ",") != "01abc,01abd" || *w.TimeoutMs != 2000 {
		t.Fatalf("ParseWait = %+v, %v (want duplicates dropped, 2000 ms)", w, err)
	}
}

func status(raw json.RawMessage) (any, error) { return ParseStatus(raw) }
func wait(raw json.RawMessage) (any, error)   { return ParseWait(raw) }
func cancel(raw json.RawMessage) (any, error) { return ParseCancel(raw) }

func TestParseBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, raw, refusal string
		n                  int
		background         bool
	}{
		{"single", `{"prompt":"p"}`, "", 1, false},
		{"single background", `{"prompt":"p","background":true}`, "", 1, true},
		{"three", `{"tasks":[{"prompt":"a"},{"prompt":"b","agent":"scout"},{"prompt":"c","worktree":true}]}`, "", 3, false},
		{"three in the background", `{"tasks":[{"prompt":"a"},{"prompt":"b"}],"background":true}`, "", 2, true},
		{"single bad", `{"prompt":" "}`, "task: prompt is blank", 0, false},
		{"unknown single", `{"prompt":"p","x":1}`, `unknown argument "x"; task takes: prompt, agent, timeoutMs, worktree, resume, background`, 0, false},
		{"prompt beside tasks", `{"prompt":"p","tasks":[{"prompt":"a"}]}`, `"prompt" cannot be given beside tasks`, 0, false},
		{"unknown beside tasks", `{"x":1,"tasks":[{"prompt":"a"}]}`, `unknown argument "x"; with tasks, task takes only tasks and background`, 0, false},
		{"tasks not a list", `{"tasks":{"prompt":"a"}}`, "tasks must be a list of task objects", 0, false},
		{"tasks empty", `{"tasks":[]}`, "tasks is empty", 0, false},
		{"item bad", `{"tasks":[{"prompt":"a"},{"prompt":"b","timeoutMs":5}]}`, "task: tasks[1]: timeoutMs must be a whole number", 0, false},
		{"item not an object", `{"tasks":["a"]}`, "task: tasks[0]: the arguments must be a JSON object", 0, false},
		{"item background", `{"tasks":[{"prompt":"a","background":true}]}`, "tasks[0]: background goes beside tasks", 0, false},
		{"nested", `{"tasks":[{"tasks":[]}]}`, "tasks[0]: tasks cannot be nested", 0, false},
		{"not an object", `"go"`, "the arguments must be a JSON object", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBatch(json.RawMessage(tc.raw))
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("ParseBatch(%s) = %v, want %q", tc.raw, err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseBatch(%s): %v", tc.raw, err)
			}
			if len(b.Tasks) != tc.n || b.Background != tc.background {
				t.Fatalf("ParseBatch(%s) = %+v", tc.raw, b)
			}
			for _, a := range b.Tasks {
				if a.Background != tc.background {
					t.Fatalf("task %+v does not carry background %v", a, tc.background)
				}
			}
		})
	}
	many := `{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"prompt":"a"},`, MaxBatch+1), ",") + `]}`
	if _, err := ParseBatch(json.RawMessage(many)); err == nil || !strings.Contains(err.Error(), "give at most 32 per call") {
		t.Fatalf("a batch of %d = %v", MaxBatch+1, err)
	}
}
