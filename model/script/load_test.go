package script_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
)

var update = flag.Bool("update", false, "rewrite the golden .err files of testdata/bad")

// TestLoadRejectsBadScripts holds every bad script of testdata/bad to the
// line it must point at and to its golden message.
func TestLoadRejectsBadScripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		line int
		want string // a fragment the message must hold
	}{
		{"unknown_top_key", 3, `unknown key "model" in the script (allowed: rules, contextWindow)`},
		{"context_window_zero", 1, "contextWindow must be at least 1, not 0"},
		{"context_window_not_int", 3, `contextWindow needs a whole number of tokens, not the string "8k" (write e.g. contextWindow: 8000)`},
		{"context_window_without_rules", 1, "the script has no `rules` key"},
		{"compaction_not_bool", 2, `compaction needs true or false, not the string "yes"`},
		{"unknown_rule_key", 3, `unknown key "name" in a rule (allowed: when, reply)`},
		{"unknown_when_key", 4, `unknown key "users" in when`},
		{"unknown_reply_key", 5, `unknown key "stop" in reply`},
		{"unknown_call_key", 5, `unknown key "arguments" in a call (allowed: tool, args)`},
		{"unknown_usage_key", 4, `unknown key "outputs" in usage`},
		{"bad_regexp_user", 3, "bad regexp in user"},
		{"bad_regexp_result", 4, "bad regexp in result"},
		{"bad_delay", 4, `bad delay "soon" (write a Go duration such as 200ms`},
		{"delay_without_unit", 4, "delay 200 has no unit"},
		{"negative_delay", 4, "is negative"},
		{"empty_rules", 1, "the rules list is empty"},
		{"null_rules", 2, "the rules list is empty"},
		{"no_rules", 1, `unknown key "version"`},
		{"empty_file", 1, "the script is empty"},
		{"depth_not_int", 2, `depth needs a whole number, not the string "one"`},
		{"turn_zero", 2, "turn must be at least 1, not 0"},
		{"agent_null", 3, `agent needs a string value, got nothing (write agent: "" for an empty string)`},
		{"text_not_string", 3, "text needs a string, not a list"},
		{"calls_not_list", 3, "calls must be a list of {tool, args}"},
		{"args_not_mapping", 4, "args must be a mapping"},
		{"call_without_tool", 4, "this call names no tool"},
		{"rule_without_reply", 3, "this rule has no reply"},
		{"reply_without_content", 3, "reply needs text, calls or error"},
		{"calls_with_error", 4, "cannot both make calls and fail with error"},
		{"negative_usage", 4, "input must be at least 0, not -5"},
		{"invalid_yaml", 2, "invalid YAML"},
		{"rules_not_list", 2, "rules must be a list of rules, not a mapping"},
		{"duplicate_key", 3, `"reply" already defined`},
		{"tag_used", 2, "YAML tags such as !!str are not supported"},
		{"merge_key", 4, "merge keys (<<) are not supported"},
		{"alias_without_anchor", 2, "alias *greeting names no anchor"},
		{"alias_bomb", 2, "aliases make the script hold more than 100000 values"},
		{"two_documents", 4, "a second YAML document"},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.file+".yaml"] = true
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "bad", tc.file+".yaml")
			_, err := script.Load(path)
			if err == nil {
				t.Fatalf("Load(%s) accepted a bad script", path)
			}
			msg := err.Error()
			prefix := path + ":" + strconv.Itoa(tc.line) + ": "
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("message does not start with %q:\n%s", prefix, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message lacks %q:\n%s", tc.want, msg)
			}
			if !regexp.MustCompile(`\(.+\)`).MatchString(msg) {
				t.Errorf("message says nothing about how to fix it:\n%s", msg)
			}
			golden := strings.TrimSuffix(path, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(msg+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run go test -update to create it): %v", err)
			}
			if got := msg + "\n"; got != string(want) {
				t.Errorf("message changed (run go test -update if intended)\n got: %s want: %s", got, want)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no test case", f)
		}
	}
}

func TestLoadMissingFileSaysWhichPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := script.Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "script:") {
		t.Fatalf("Load(missing) = %v; want an error naming %s and the script: binding", err, path)
	}
}

// TestLoadResolvesAnchorsAndAliases holds anchors and aliases to what they
// mean in YAML: a reused rule, reply, text and call arguments answer as if
// written out.
func TestLoadResolvesAnchorsAndAliases(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 1}
    reply: &greet {text: &hello "hello", calls: [{tool: read, args: &args {path: a.go}}]}
  - when: {turn: 2}
    reply: *greet
  - when: {turn: 3}
    reply: {text: *hello, calls: [{tool: grep, args: *args}]}
`)
	for turn, tool := range map[int]string{1: "read", 2: "read", 3: "grep"} {
		msg, err := s.Stream(context.Background(), model.Request{Turn: turn}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Text() != "hello" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Name != tool || string(msg.ToolCalls[0].Args) != `{"path":"a.go"}` {
			t.Errorf("turn %d: message = %+v; want text hello and one %s call with args {\"path\":\"a.go\"}", turn, msg, tool)
		}
	}
}
