package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List and show transcripts, with their children"}
	cmd.AddCommand(uses(&cobra.Command{
		Use:   "ls",
		Short: "List the main sessions of this directory, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			cwd, err := g.workDir()
			if err != nil {
				return err
			}
			list, err := session.ListSessions(home, cwd)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			for i := range list {
				fillShellSummary(&list[i])
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, s := range list {
					enc.Encode(map[string]any{"id": s.ID, "path": s.Path, "createdAt": s.CreatedAt, "modifiedAt": s.ModTime, "children": s.Children, "lastStatus": s.LastStatus, "prompt": s.FirstPrompt, "problem": s.Problem})
				}
				return nil
			}
			if len(list) == 0 {
				fmt.Printf("no sessions for %s\n", cwd)
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tCHILDREN\tLAST STATUS\tPROMPT")
			for _, s := range list {
				p := s.FirstPrompt
				if s.Problem != "" {
					p = "(" + s.Problem + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Children, dash(string(s.LastStatus)), clipLine(p, 60))
			}
			return tw.Flush()
		},
	}, lookFlags...))
	cmd.AddCommand(uses(&cobra.Command{
		Use:   "show ID",
		Short: "Show a session's messages and children, each message on a line (-v: in full)",
		Args:  oneArg("a session id (a main session's or a child's)", "list them with `ink sessions ls`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			cwd, err := g.workDir()
			if err != nil {
				return err
			}
			id := args[0]
			if !session.ValidID(id) {
				return usageErr("%q is not a session id (ids use only a-z, 0-9 and '-'); list them with `ink sessions ls`", id)
			}
			path, err := findTranscript(home, cwd, id)
			if err != nil {
				return err
			}
			tr, err := session.Open(path)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			var children []session.ChildSummary
			if tr.Header.Parent == "" {
				children, _ = session.ListChildren(path)
			}
			if g.json {
				return json.NewEncoder(os.Stdout).Encode(showJSON(path, tr, children))
			}
			kind := "session"
			if tr.Header.Parent != "" {
				kind = "child session"
			}
			fmt.Printf("%s %s  %s\ncwd %s\ntranscript %s\n", kind, tr.Header.ID, tr.Header.CreatedAt.Local().Format(time.RFC1123), tr.Header.Cwd, path)
			if tr.Header.Parent != "" {
				fmt.Printf("parent %s\n", tr.Header.Parent)
			}
			fmt.Println()
			for _, e := range tr.Entries {
				switch {
				case e.Message != nil:
					printMessage(*e.Message, g.verbose)
				case e.Attempt != nil && e.Attempt.Phase == session.PhaseEnd:
					a := e.Attempt
					reason := ""
					if a.Reason != "" {
						reason = ": " + a.Reason
					}
					fmt.Printf("-- attempt %s ended %s%s (%d %s)\n", a.AttemptID, a.Status, reason, a.Turns, orchestrator.Plural(a.Turns, "turn", "turns"))
				}
			}
			if tr.Torn != nil {
				fmt.Printf("(the last line is torn: %s; it is repaired when the session is continued)\n", tr.Torn.Reason)
			}
			if len(children) > 0 {
				fmt.Println("\nchildren:")
				for _, c := range children {
					p := ""
					if c.Problem != "" {
						p = "  (" + c.Problem + ")"
					}
					fmt.Printf("  %s  %-11s %d %-8s  agent %s%s\n", dash(c.ID), dash(string(c.LastStatus)), c.Attempts, orchestrator.Plural(c.Attempts, "attempt", "attempts"), dash(c.Agent), p)
				}
				fmt.Println("continue a child with: ink task --resume <child id> \"…\"")
			}
			return nil
		},
	}, "cwd", "json", "verbose"))
	return cmd
}

// printMessage prints one message of a transcript, each part on one
// clipped line; full prints every part whole, as written.
func printMessage(m model.Message, full bool) {
	clip := clipLine
	if full {
		clip = func(s string, _ int) string { return strings.TrimRight(s, "\n") }
	}
	switch m.Role {
	case model.RoleUser:
		fmt.Printf("user: %s\n", clip(m.Text(), 200))
	case model.RoleAssistant:
		if t := strings.TrimSpace(m.Text()); t != "" {
			fmt.Printf("assistant: %s\n", clip(t, 200))
		}
		for _, c := range m.ToolCalls {
			fmt.Printf("  → %s %s\n", c.Name, clip(string(c.Args), 120))
		}
	case model.RoleToolResult:
		for _, r := range m.Results {
			tag := "ok"
			if r.IsError {
				tag = "error"
			}
			fmt.Printf("  ← %s (%s) %s\n", r.ToolName, tag, clip(r.Content, 120))
		}
	}
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// fillShellSummary completes the summary of a shell session (the parent of
// children launched by `ink task`): it has no attempts and no user message,
// so its last status is its newest TaskRecord's and its prompt is its first
// task call's.
func fillShellSummary(s *session.SessionSummary) {
	if s.Problem != "" || (s.LastStatus != "" && s.FirstPrompt != "") {
		return
	}
	tr, err := session.Open(s.Path)
	if err != nil {
		return
	}
	var status session.Status
	prompt := ""
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			if c.Name != "task" || prompt != "" {
				continue
			}
			var args struct {
				Prompt string `json:"prompt"`
				Resume string `json:"resume"`
				// Tasks is a batch of the MCP server's task tool.
				Tasks []struct {
					Prompt string `json:"prompt"`
				} `json:"tasks"`
			}
			if json.Unmarshal(c.Args, &args) == nil {
				if args.Prompt == "" && len(args.Tasks) > 0 {
					args.Prompt = args.Tasks[0].Prompt
				}
				prompt = "task: " + args.Prompt
			}
		}
		for _, rec := range session.TaskRecordsOf(m) {
			status = rec.Status
		}
	}
	if s.LastStatus == "" {
		s.LastStatus = status
	}
	if s.FirstPrompt == "" {
		s.FirstPrompt = prompt
	}
}

// findTranscript finds a session by id: a main session of cwd, then of any
// directory, then a child session of any of them.
func findTranscript(home, cwd, id string) (string, error) {
	path := session.MainPath(home, cwd, id)
	if _, err := os.Lstat(path); err == nil {
		return path, nil
	}
	for _, pattern := range []string{
		filepath.Join(home, "sessions", "*", id+".jsonl"),
		filepath.Join(home, "sessions", "*", "*", "children", id+".jsonl"),
	} {
		matches, _ := filepath.Glob(pattern)
		switch len(matches) {
		case 0:
		case 1:
			return matches[0], nil
		default:
			return "", &exitError{code: exitFailed, msg: fmt.Sprintf("%d transcripts are named %s: %s", len(matches), id, strings.Join(matches, ", "))}
		}
	}
	return "", usageErr("no session %s; list them with `ink sessions ls`", id)
}

// showJSON is the --json form of `ink sessions show`: the header, every
// message with its TaskRecord (or TaskRecords), the attempts, the children and a torn tail.
func showJSON(path string, tr *session.Transcript, children []session.ChildSummary) map[string]any {
	msgs := make([]map[string]any, 0, len(tr.Messages))
	for _, m := range tr.Messages {
		var obj map[string]any
		data, _ := json.Marshal(m)
		json.Unmarshal(data, &obj)
		if len(m.TaskRecord) > 0 {
			obj["taskRecord"] = m.TaskRecord
		}
		if len(m.TaskRecords) > 0 {
			obj["taskRecords"] = m.TaskRecords
		}
		msgs = append(msgs, obj)
	}
	kids := make([]map[string]any, 0, len(children))
	for _, c := range children {
		k := map[string]any{"id": c.ID, "path": c.Path, "lastStatus": c.LastStatus, "attempts": c.Attempts}
		if c.Agent != "" {
			k["agent"] = c.Agent
		}
		if c.Problem != "" {
			k["problem"] = c.Problem
		}
		kids = append(kids, k)
	}
	out := map[string]any{"id": tr.Header.ID, "path": path, "header": tr.Header, "messages": msgs, "attempts": tr.Attempts(), "children": kids}
	if tr.Torn != nil {
		out["torn"] = map[string]any{"line": tr.Torn.Line, "offset": tr.Torn.Offset, "bytes": tr.Torn.Bytes, "reason": tr.Torn.Reason}
	}
	return out
}
