package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inkdev/ink/orchestrator"
)

// Client is an MCP client `ink mcp config` writes a configuration for: a
// closed set.
type Client string

// The clients.
const (
	ClientClaude Client = "claude" // Claude Code: a `claude mcp add` command
	ClientCodex  Client = "codex"  // Codex: an [mcp_servers.ink] table for ~/.codex/config.toml
	ClientCursor Client = "cursor" // Cursor: an mcpServers entry for ~/.cursor/mcp.json
	ClientJSON   Client = "json"   // any client that reads an mcp.json with ${VAR} expansion
)

// Clients lists the clients ClientConfig knows, in the order help shows them.
var Clients = []Client{ClientClaude, ClientCodex, ClientCursor, ClientJSON}

// ClientNames is Clients joined by sep, for messages and help.
func ClientNames(sep string) string {
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return strings.Join(names, sep)
}

// ClientSetup is what a client's configuration starts: ink's binary over
// stdio, its flags, and the environment the server needs, which the client
// must pass on (a client may start its servers with an environment of its
// own: Codex passes only what env_vars lists).
type ClientSetup struct {
	// Command is the absolute path of the ink binary.
	Command string
	// Args are the flags after "mcp".
	Args []string
	// Forward names the variables set where the configuration is made that
	// the server reads: provider keys and endpoints, and ink's INK_*
	// settings. A configuration passes them by name or by reference, never
	// a secret's value.
	Forward []string
	// Values holds the values of the variables of Forward that are not
	// secret (ink's settings, such as INK_HOME), which a configuration may
	// write as they are.
	Values map[string]string
	// ToolTimeout is how long one tool call may take (a task call waits
	// for its children), for clients that cut calls short.
	ToolTimeout time.Duration
}

// approvedTools are the tools that change something and that Codex must be
// told it may run without asking: without an approval mode, a tool that is
// not read-only is refused under approval policy "never". worktree_merge
// is left to Codex's policy: a merge into the user's branch is theirs to
// approve.
var approvedTools = []string{"task", "task_cancel"}

// ClientConfig renders the configuration of client for setup: text to paste
// into the client's configuration (or, for Claude Code, to run), and notes
// for the person: where it goes and how the keys reach the server.
func ClientConfig(client Client, setup ClientSetup) (text string, notes []string, err error) {
	args := append([]string{"mcp"}, setup.Args...)
	secrets := setup.secretVars()
	switch client {
	case ClientCodex:
		var b strings.Builder
		b.WriteString("[mcp_servers.ink]\n")
		fmt.Fprintf(&b, "command = %s\n", tomlString(setup.Command))
		fmt.Fprintf(&b, "args = %s\n", tomlStrings(args))
		if len(setup.Forward) > 0 {
			fmt.Fprintf(&b, "env_vars = %s\n", tomlStrings(setup.Forward))
		}
		if setup.ToolTimeout > 0 {
			fmt.Fprintf(&b, "tool_timeout_sec = %d\n", int64(setup.ToolTimeout/time.Second))
		}
		b.WriteString("supports_parallel_tool_calls = true\n")
		var tools []string
		for _, t := range approvedTools {
			tools = append(tools, fmt.Sprintf("%s = { approval_mode = \"approve\" }", t))
		}
		fmt.Fprintf(&b, "tools = { %s }\n", strings.Join(tools, ", "))
		notes = append(notes, "paste this table into ~/.codex/config.toml (or a trusted project's .codex/config.toml), after its top-level keys")
		if len(setup.Forward) > 0 {
			notes = append(notes, fmt.Sprintf("env_vars passes %s from Codex's environment: start Codex where %s set", strings.Join(setup.Forward, ", "), orchestrator.Plural(len(setup.Forward), "it is", "they are")))
		}
		notes = append(notes, "task and task_cancel run without asking (approval_mode \"approve\"), so that they work under approval policy \"never\"; worktree_merge follows your approval policy")
		return b.String(), notes, nil
	case ClientClaude:
		words := []string{"claude", "mcp", "add", "--transport", "stdio", "--scope", "user"}
		for _, k := range setup.Forward {
			if v, ok := setup.Values[k]; ok {
				words = append(words, "--env", k+"="+v)
			}
		}
		words = append(words, "ink", "--", setup.Command)
		words = append(words, args...)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellWord(w)
		}
		notes = append(notes, "run this command once; --scope user makes ink available in every project (ink works in the directory Claude Code runs in)")
		if len(secrets) > 0 {
			notes = append(notes, fmt.Sprintf("Claude Code starts ink with its own environment, so %s %s ink when Claude Code runs where %s set; %s not written into Claude Code's configuration", strings.Join(secrets, ", "), orchestrator.Plural(len(secrets), "reaches", "reach"), orchestrator.Plural(len(secrets), "it is", "they are"), orchestrator.Plural(len(secrets), "it is", "they are")))
		}
		return strings.Join(quoted, " ") + "\n", notes, nil
	case ClientCursor, ClientJSON:
		ref := func(k string) string { return "${" + k + "}" }
		where := "add this entry to the mcpServers of the client's mcp.json (for Claude Code's project scope: .mcp.json at the project's root)"
		if client == ClientCursor {
			ref = func(k string) string { return "${env:" + k + "}" }
			where = "add this entry to the mcpServers of ~/.cursor/mcp.json (or a project's .cursor/mcp.json)"
		}
		env := map[string]string{}
		for _, k := range setup.Forward {
			if v, ok := setup.Values[k]; ok {
				env[k] = v
			} else {
				env[k] = ref(k)
			}
		}
		server := struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
		}{setup.Command, args, env}
		out, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"ink": server}}, "", "  ")
		if err != nil {
			return "", nil, err
		}
		notes = append(notes, where)
		if len(secrets) > 0 {
			notes = append(notes, fmt.Sprintf("%s %s passed as %s (%s), expanded from the client's environment when it starts ink: start the client where %s set; a client that does not expand references passes them as text, which ink reports", strings.Join(secrets, ", "), orchestrator.Plural(len(secrets), "is", "are"), orchestrator.Plural(len(secrets), "a reference", "references"), ref(secrets[0]), orchestrator.Plural(len(secrets), "it is", "they are")))
		}
		return string(out) + "\n", notes, nil
	}
	return "", nil, fmt.Errorf("unknown client %q: give one of %s", client, ClientNames(", "))
}

// secretVars are the variables of Forward whose values a configuration
// must not hold: keys, and endpoints (a URL may hold credentials).
func (s ClientSetup) secretVars() []string {
	var out []string
	for _, k := range s.Forward {
		if _, ok := s.Values[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlStrings renders ss as a TOML array of strings.
func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// shellWord quotes w for a POSIX shell when it needs quoting.
func shellWord(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || slices.Contains([]rune("-_./=:@,+%"), r))
	}) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
