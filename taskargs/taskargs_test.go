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
