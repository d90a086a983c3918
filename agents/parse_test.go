package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenProfile is the form a parsed profile takes in a golden file: every
// field, with the machine-specific paths made relative.
type goldenProfile struct {
	Name        string         `json:"name"`
	Slug        string         `json:"slug"`
	Description string         `json:"description"`
	Tools       []string       `json:"tools"`
	Model       string         `json:"model"`
	Timeout     string         `json:"timeout"`
	Worktree    *bool          `json:"worktree"`
	Thinking    string         `json:"thinking"`
	Sandbox     string         `json:"sandbox,omitempty"`
	Writable    []string       `json:"writable,omitempty"`
	Dropped     []string       `json:"droppedTools,omitempty"`
	Unknown     []string       `json:"unknownTools,omitempty"`
	StrictYAML  string         `json:"strictYAML,omitempty"`
	Body        string         `json:"body"`
	Source      string         `json:"source"`
	RoleSHA256  string         `json:"roleSha256"`
	Notes       []string       `json:"notes"`
	Extra       map[string]any `json:"extra"`
}

func toGolden(t *testing.T, p Profile) []byte {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, p.Source)
	if err != nil {
		t.Fatal(err)
	}
	g := goldenProfile{
		Name: p.Name, Slug: p.Slug, Description: p.Description, Tools: p.Tools, Model: p.Model,
		Timeout: p.Timeout.String(), Worktree: p.Worktree, Thinking: p.Thinking,
		Body: p.Body, Source: filepath.ToSlash(rel), RoleSHA256: p.RoleSHA256,
		Notes: p.Notes, Extra: p.Extra, Sandbox: p.Sandbox, Writable: p.Writable,
		Dropped: p.DroppedTools, Unknown: p.UnknownTools,
	}
	if p.StrictYAML != nil {
		g.StrictYAML = p.StrictYAML.Error()
	}
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// TestParseClaudeCollection parses profiles written the way public Claude
// Code collections write them and compares every field with a golden file.
func TestParseClaudeCollection(t *testing.T) {
	files, err := filepath.Glob("testdata/claude/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test profiles: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(path, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := toGolden(t, p)
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(filepath.Base(path), ".md")+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from %s:\n got: %s\nwant: %s", path, golden, got, want)
			}
		})
	}
}

// TestParseErrors holds the exact message of every kind of bad file: the
// path, the line a user must look at, and what to fix.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	const (
		timeoutReason = `timeout must be a positive whole number of seconds (e.g. timeout: 600); got `
	)
	tests := []struct {
		file string
		want string
	}{
		{"no-frontmatter.md", "testdata/bad/no-frontmatter.md:1: no frontmatter: the file must start with a line '---'"},
		{"unterminated.md", "testdata/bad/unterminated.md:1: frontmatter is not closed by a line '---'"},
		{"missing-name.md", `testdata/bad/missing-name.md:1: missing required field "name": add a line "name: my-agent" to the frontmatter`},
		{"missing-description.md", `testdata/bad/missing-description.md:1: missing required field "description": add a line "description: when to use this agent" to the frontmatter`},
		{"blank-description.md", `testdata/bad/blank-description.md:3: missing required field "description": add a line "description: when to use this agent" to the frontmatter`},
		{"timeout-zero.md", "testdata/bad/timeout-zero.md:4: " + timeoutReason + `"0"`},
		{"timeout-negative.md", "testdata/bad/timeout-negative.md:4: " + timeoutReason + `"-30"`},
		{"timeout-text.md", "testdata/bad/timeout-text.md:4: " + timeoutReason + `"10m"`},
		{"timeout-fraction.md", "testdata/bad/timeout-fraction.md:4: " + timeoutReason + `"1.5"`},
		{"worktree-yes.md", `testdata/bad/worktree-yes.md:4: worktree must be true or false; got "yes"`},
		{"thinking-extreme.md", `testdata/bad/thinking-extreme.md:4: thinking must be one of off, minimal, low, medium, high, xhigh, max; got "extreme"`},
		{"tab-indent.md", `testdata/bad/tab-indent.md:3: invalid YAML: found character '\t' that cannot start any token (indent with spaces; YAML does not allow tabs)`},
		{"model-unknown-provider.md", `testdata/bad/model-unknown-provider.md:4: model "acme/fast-1": unknown provider "acme"; use one of anthropic, openai, deepseek, ollama, vllm, openrouter, or script:PATH`},
		{"name-with-backslash.md", `testdata/bad/name-with-backslash.md:2: name "team\\reviewer" cannot be used: a name has no '/', '\', ':', tabs or control characters (use letters, digits, '-' and spaces, such as code-reviewer)`},
		{"unquoted-colon-and-indented-lines.md", `testdata/bad/unquoted-colon-and-indented-lines.md:3: invalid YAML: mapping value is not allowed in this context (the value of "description" contains ": "; put it in quotes or write it as a block scalar: "description: |" then the text indented on the next lines)`},
		{"several-problems.md", `testdata/bad/several-problems.md:1: missing required field "name": add a line "name: my-agent" to the frontmatter (and 2 more problems; ` + "`ink agents check`" + ` lists them)`},
		{"list-frontmatter.md", `testdata/bad/list-frontmatter.md:2: the frontmatter must be YAML "key: value" lines`},
	}
	files, _ := filepath.Glob("testdata/bad/*.md")
	if len(files) != len(tests) {
		t.Errorf("testdata/bad holds %d files but the table covers %d; add the new case", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := "testdata/bad/" + tt.file
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(path, data)
			if err == nil {
				t.Fatalf("Parse(%s) succeeded; want %q", path, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%s)\n got: %s\nwant: %s", path, err, tt.want)
			}
			var problem Problem
			if !errors.As(err, &problem) || problem.Path != path || problem.Line < 1 {
				t.Errorf("error %#v is not a Problem with the path and a line", err)
			}
		})
	}
}

// TestParseToleratesFileEncodings checks the byte-level variants editors and
// other platforms produce: all must parse to the same profile.
func TestParseToleratesFileEncodings(t *testing.T) {
	t.Parallel()
	const base = "---\nname: scout\ndescription: finds things\ntools: Read, Grep\n---\n\nLook around.\n"
	tests := []struct {
		name string
		data string
	}{
		{"plain", base},
		{"crlf", strings.ReplaceAll(base, "\n", "\r\n")},
		{"bom", "\ufeff" + base},
		{"bom and crlf", "\ufeff" + strings.ReplaceAll(base, "\n", "\r\n")},
		{"no trailing newline", strings.TrimSuffix(base, "\n")},
		{"blanks after delimiters", "--- \nname: scout\ndescription: finds things\ntools: Read, Grep\n---\t\n\nLook around.\n"},
		{"body right after the closing line", "---\nname: scout\ndescription: finds things\ntools: [Read, Grep]\n---\nLook around."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("scout.md", []byte(tt.data))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if p.Name != "scout" || p.Description != "finds things" || p.Body != "Look around." {
				t.Errorf("got name %q description %q body %q", p.Name, p.Description, p.Body)
			}
			if want := []string{"read", "grep"}; !equalStrings(p.Tools, want) {
				t.Errorf("tools %q, want %q", p.Tools, want)
			}
			sum := sha256.Sum256([]byte(tt.data))
			if p.RoleSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("RoleSHA256 %s is not the SHA-256 of the raw bytes", p.RoleSHA256)
			}
			if !filepath.IsAbs(p.Source) || filepath.Base(p.Source) != "scout.md" || p.Dir != filepath.Dir(p.Source) {
				t.Errorf("Source %q Dir %q: want an absolute path and its directory", p.Source, p.Dir)
			}
		})
	}
}

func TestParseEmptyBodyAndFrontmatterOnly(t *testing.T) {
	t.Parallel()
	p, err := Parse("x.md", []byte("---\nname: x\ndescription: y\n---"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Body != "" {
		t.Errorf("body %q, want empty", p.Body)
	}
	if p.Tools != nil || p.Worktree != nil || p.Timeout != 0 || p.Model != "" || p.Thinking != "" {
		t.Errorf("absent fields must stay zero: %+v", p)
	}
}

// TestParseFields covers each field's accepted forms and the notes.
func TestParseFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fields    string
		tools     []string
		timeout   time.Duration
		worktree  *bool
		thinking  string
		model     string
		sandbox   string
		writable  []string
		network   *bool
		notes     []string
		wantError string
	}{
		{name: "ink names and dedupe", fields: "tools: read, Edit, MultiEdit, edit, Glob, LS, task", tools: []string{"read", "edit", "find", "ls", "task"}},
		{name: "empty list means no tools", fields: "tools: [WebFetch]", tools: []string{}, notes: []string{
			"tools dropped: WebFetch (Claude Code tools ink lacks); the agent gets no tools"}},
		{name: "blank tools means the parent's", fields: "tools:", tools: nil, notes: []string{`"tools" is empty; the agent gets its parent's tools (remove the line, or list the tools it needs)`}},
		{name: "tools of a wrong type", fields: "tools: {a: b}", wantError: `x.md:4: tools must be a comma-separated list (tools: Read, Grep) or a YAML list of tool names; got "{a: b}"`},
		{name: "timeout quoted", fields: `timeout: "90"`, timeout: 90 * time.Second},
		{name: "timeout overflow", fields: "timeout: 99999999999999999999", wantError: `x.md:4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "99999999999999999999"`},
		{name: "timeout blank", fields: "timeout:", wantError: `x.md:4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got nothing`},
		{name: "worktree false", fields: "worktree: false", worktree: boolPtr(false)},
		{name: "worktree string any case", fields: `worktree: "TRUE"`, worktree: boolPtr(true)},
		{name: "isolation worktree", fields: "isolation: worktree", worktree: boolPtr(true), notes: []string{"isolation: worktree is read as worktree: true"}},
		{name: "worktree false beats isolation", fields: "worktree: false\nisolation: worktree", worktree: boolPtr(false), notes: []string{"isolation: worktree is overridden by worktree: false"}},
		{name: "thinking any case", fields: "thinking: XHigh", thinking: "xhigh"},
		{name: "thinking blank", fields: "thinking:", wantError: "x.md:4: thinking must be one of off, minimal, low, medium, high, xhigh, max; got nothing"},
		{name: "model blank", fields: "model:", wantError: "x.md:4: model must be inherit, sonnet, opus, haiku, fable, a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-5); got nothing (remove the line to use the parent's model)"},
		{name: "model spaces", fields: `model: "  "`, wantError: "x.md:4: model is blank; write inherit, sonnet, opus, haiku, fable, a model id or PROVIDER/MODEL, or remove the line to use the parent's model"},
		{name: "model with a space", fields: "model: claude sonnet", wantError: `x.md:4: model "claude sonnet" contains a space; write a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-5)`},
		{name: "model script", fields: "model: script:flows/a.yaml", model: "script:flows/a.yaml"},
		{name: "model provider without id", fields: "model: openai/", wantError: `x.md:4: model "openai/": missing model name after "openai/"`},
		{name: "disallowed narrows listed tools", fields: "tools: Read, Bash, Grep\ndisallowedTools: [Bash]", tools: []string{"read", "grep"}, notes: []string{"disallowedTools (line 5): the agent gets read, grep"}},
		{name: "duplicate key keeps the first", fields: "timeout: 5\ntimeout: 6", timeout: 5 * time.Second, notes: []string{
			`the frontmatter is not valid YAML (line 5: mapping key "timeout" already defined at [3:1]); ink reads it line by line, as Claude Code does (` + "`ink agents check --strict`" + ` reports it)`,
			`keys given more than once, read as Claude Code reads them: "timeout" again on line 5 (the one on line 4 is kept)`}},
		{name: "aliases refused", fields: "x: &a [1, 2]\ny: *a", wantError: `x.md:5: YAML aliases (*a) are not allowed in a profile; write the value out`},
		{name: "tools star", fields: `tools: "*"`, tools: nil, notes: []string{`"tools: *" gives the agent its parent's tools`}},
		{name: "disallowed pattern withholds the whole tool", fields: "disallowedTools: Bash(rm:*), WebFetch, Task", tools: []string{"read", "grep", "find", "ls", "edit", "write"}, notes: []string{
			`disallowedTools "Bash(rm:*)": ink cannot withhold only part of bash, so the agent gets no bash`,
			"disallowedTools (line 4): the agent gets read, grep, find, ls, edit, write"}},
		{name: "disallowed task from a listed pool", fields: "tools: read, task\ndisallowedTools: Task", tools: []string{"read"}, notes: []string{"disallowedTools (line 5): the agent gets read"}},
		{name: "disallowed of nothing ink has changes nothing", fields: "disallowedTools: WebSearch", tools: nil},
		{name: "Claude Code field kept", fields: "memory: project", notes: []string{`field "memory" is not used by ink; ignored`}},
		{name: "unknown field kept", fields: "modle: opus", notes: []string{`field "modle" is not a field ink or Claude Code knows; ignored`}},
		{name: "sandbox", fields: "sandbox: Read-Only", sandbox: "read-only"},
		{name: "sandbox workspace-write", fields: "sandbox: workspace-write", sandbox: "workspace-write"},
		{name: "sandbox full access", fields: "sandbox: danger-full-access", sandbox: "danger-full-access"},
		{name: "sandbox unknown", fields: "sandbox: strict", wantError: `x.md:4: sandbox must be one of read-only, workspace-write, danger-full-access; got "strict" (remove the line for ink's default, workspace-write)`},
		{name: "sandbox blank", fields: "sandbox:", wantError: `x.md:4: sandbox must be one of read-only, workspace-write, danger-full-access; got nothing (remove the line for ink's default, workspace-write)`},
		{name: "writable comma list", fields: "writable: build, /tmp/cache/, ~/.cache/go-build", writable: []string{"build", "/tmp/cache", "~/.cache/go-build"}},
		{name: "writable YAML list", fields: "writable:\n  - out\n  - ./dist/../dist", writable: []string{"out", "dist"}},
		{name: "writable of a wrong type", fields: "writable: {a: b}", wantError: `x.md:4: writable must be a directory, a comma-separated list of directories or a YAML list of them; got "{a: b}"`},
		{name: "writable under read-only", fields: "sandbox: read-only\nwritable: out", sandbox: "read-only", writable: []string{"out"}, notes: []string{"writable: has no effect with sandbox: read-only"}},
		{name: "network true", fields: "network: true", network: boolPtr(true)},
		{name: "network false", fields: "network: False", network: boolPtr(false)},
		{name: "network not a bool", fields: "network: internet", wantError: `x.md:4: network must be true or false; got "internet" (remove the line for ink's default: no network for bash unless ink runs with --network)`},
		{name: "network under danger-full-access", fields: "sandbox: danger-full-access\nnetwork: false", sandbox: "danger-full-access", network: boolPtr(false),
			notes: []string{"network: has no effect with sandbox: danger-full-access, which confines nothing"}},
		{name: "several bad fields are all counted", fields: "timeout: 0\nthinking: loud\nsandbox: x", wantError: `x.md:4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "0" (and 2 more problems; ` + "`ink agents check`" + ` lists them)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := "---\nname: x\ndescription: y\n" + tt.fields + "\n---\nbody\n"
			p, err := Parse("x.md", []byte(data))
			if tt.wantError != "" {
				if err == nil || err.Error() != tt.wantError {
					t.Fatalf("error\n got: %v\nwant: %s", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !equalStrings(p.Tools, tt.tools) || (p.Tools == nil) != (tt.tools == nil) {
				t.Errorf("tools %#v, want %#v", p.Tools, tt.tools)
			}
			if p.Timeout != tt.timeout {
				t.Errorf("timeout %v, want %v", p.Timeout, tt.timeout)
			}
			if (p.Worktree == nil) != (tt.worktree == nil) || (p.Worktree != nil && *p.Worktree != *tt.worktree) {
				t.Errorf("worktree %v, want %v", p.Worktree, tt.worktree)
			}
			if p.Thinking != tt.thinking || p.Model != tt.model {
				t.Errorf("thinking %q model %q, want %q %q", p.Thinking, p.Model, tt.thinking, tt.model)
			}
			if p.Sandbox != tt.sandbox || !equalStrings(p.Writable, tt.writable) {
				t.Errorf("sandbox %q writable %q, want %q %q", p.Sandbox, p.Writable, tt.sandbox, tt.writable)
			}
			if (p.Network == nil) != (tt.network == nil) || (p.Network != nil && *p.Network != *tt.network) {
				t.Errorf("network %v, want %v", p.Network, tt.network)
			}
			if !equalStrings(p.Notes, tt.notes) {
				t.Errorf("notes\n got: %q\nwant: %q", p.Notes, tt.notes)
			}
		})
	}
}

func TestParseKeepsUnknownFieldsInExtra(t *testing.T) {
	t.Parallel()
	data := "---\nname: x\ndescription: y\ncolor: red\nmaxTurns: 7\nskills: [a, b]\n---\n"
	p, err := Parse("x.md", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Extra["color"] != "red" {
		t.Errorf("extra %#v", p.Extra)
	}
	// maxTurns is a field ink reads, not an extra.
	if _, extra := p.Extra["maxTurns"]; extra || p.MaxTurns != 7 {
		t.Errorf("maxTurns %d, extra %#v", p.MaxTurns, p.Extra)
	}
	if skills, ok := p.Extra["skills"].([]any); !ok || len(skills) != 2 {
		t.Errorf("skills %#v, want a list of 2", p.Extra["skills"])
	}
	if len(p.Notes) != 2 {
		t.Errorf("want one note per ignored field, got %q", p.Notes)
	}
}

func TestParseTurnsAndWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fields  string
		turns   int
		window  int64
		refusal string
	}{
		{fields: "maxTurns: 40\ncontextWindow: 128k", turns: 40, window: 128000},
		{fields: "contextWindow: 200000", window: 200000},
		{fields: "contextWindow: 1M", window: 1000000},
		{fields: "maxTurns: 0", refusal: "maxTurns must be a positive whole number"},
		{fields: "maxTurns: many", refusal: "maxTurns must be a positive whole number"},
		{fields: "contextWindow: huge", refusal: "contextWindow must be a positive number of tokens"},
	} {
		p, err := Parse("x.md", []byte("---\nname: x\ndescription: y\n"+tc.fields+"\n---\n"))
		switch {
		case tc.refusal != "":
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("%q: %v, want %q", tc.fields, err, tc.refusal)
			}
		case err != nil || p.MaxTurns != tc.turns || p.ContextWindow != tc.window:
			t.Errorf("%q: turns %d window %d, %v", tc.fields, p.MaxTurns, p.ContextWindow, err)
		}
	}
}

func boolPtr(b bool) *bool { return &b }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseNameAndDescriptionTypes(t *testing.T) {
	t.Parallel()
	tests := []struct{ data, want string }{
		{"---\nname: [a, b]\ndescription: x\n---\n", `x.md:2: name must be text such as code-reviewer; got "[a, b]"`},
		{"---\nname: a\ndescription:\n  - one\n  - two\n---\n", `x.md:3: description must be text (quote it, or write it as a block scalar: "description: |"); got "- one\n  - two"`},
		{"---\nname:\ndescription: x\n---\n", `x.md:2: missing required field "name": add a line "name: my-agent" to the frontmatter`},
		{"---\nname: 2024\ndescription: x\n---\n", ""},
	}
	for _, tt := range tests {
		_, err := Parse("x.md", []byte(tt.data))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Parse(%q)\n got: %s\nwant: %s", tt.data, got, tt.want)
		}
	}
}
