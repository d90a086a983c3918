package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/toolargs"
)

const agentsListDescription = "List the agent profiles task can run (its agent argument): name, description, tools, model " +
	"and timeout, plus profile files that were skipped and why. Profiles live in ~/.ink/agents, ~/.claude/agents and the " +
	"project's .ink/agents and .claude/agents (project ones once the project is trusted with `ink trust`)."

// addAgentTools registers agents_list.
func (s *Server) addAgentTools() {
	addTool(s, &mcp.Tool{
		Name: "agents_list", Title: "List agent profiles", Description: agentsListDescription, InputSchema: toolargs.Schema[noArgs](),
		Annotations: &mcp.ToolAnnotations{Title: "List agent profiles", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.agentsList)
}

func (s *Server) agentsList(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *AgentsOutput) {
	if _, err := toolargs.Decode[noArgs]("agents_list", req.Params.Arguments); err != nil {
		return toolError(err.Error()), nil
	}
	list := []AgentInfo{}
	var notes []string
	if s.cfg.Profiles != nil {
		if set := s.cfg.Profiles.Current(); set != nil {
			for _, p := range set.All() {
				a := AgentInfo{Name: p.Name, Description: p.Description, Tools: p.Tools, Model: p.Model, TimeoutS: p.Timeout.Seconds(), Worktree: p.Worktree, Source: p.Source}
				if len(p.UnknownTools) > 0 {
					a.Refused = fmt.Sprintf("it lists unknown tools %s; fix the tools: line of %s", strings.Join(p.UnknownTools, ", "), p.Source)
				}
				list = append(list, a)
			}
			for _, pr := range set.Problems() {
				notes = append(notes, "skipped: "+pr.Error())
			}
			if msg := set.UntrustedMessage(); msg != "" {
				notes = append(notes, "untrusted: "+msg)
			}
		}
	}
	var b strings.Builder
	if len(list) == 0 {
		b.WriteString("no agent profiles are loaded; task runs a general agent when agent is left out")
	} else {
		fmt.Fprintf(&b, "%d agent %s (give the name as task's agent):", len(list), map[bool]string{true: "profile", false: "profiles"}[len(list) == 1])
		for _, a := range list {
			fmt.Fprintf(&b, "\n- %s: %s", a.Name, a.Description)
			var about []string
			if a.Tools != nil {
				about = append(about, "tools "+strings.Join(a.Tools, ", "))
			}
			if a.Model != "" {
				about = append(about, "model "+a.Model)
			}
			if a.TimeoutS > 0 {
				about = append(about, fmt.Sprintf("timeout %gs", a.TimeoutS))
			}
			if a.Worktree != nil && *a.Worktree {
				about = append(about, "in its own worktree")
			}
			if len(about) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(about, "; "))
			}
			if a.Refused != "" {
				fmt.Fprintf(&b, " — refused: %s", a.Refused)
			}
		}
	}
	for _, n := range notes {
		b.WriteString("\n")
		b.WriteString(n)
	}
	return textResult(b.String(), false), &AgentsOutput{Agents: list, Notes: notes}
}
