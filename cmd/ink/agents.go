package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/sandbox"
)

// profileOptions says where the profiles of the current project are: the
// same directories and trust list `ink run` and `ink task` use.
func profileOptions(g *globals) (agents.LoadOptions, error) {
	home, err := inkHome()
	if err != nil {
		return agents.LoadOptions{}, err
	}
	cwd, err := g.workDir()
	if err != nil {
		return agents.LoadOptions{}, err
	}
	trust, err := agents.LoadTrust(home)
	if err != nil {
		return agents.LoadOptions{}, &exitError{code: exitFailed, msg: err.Error()}
	}
	userHome, _ := os.UserHomeDir()
	return agents.LoadOptions{Home: userHome, InkHome: home, ProjectRoot: agents.ProjectRoot(cwd), Trust: trust}, nil
}

// loadProfiles loads the profiles of the current project once.
func loadProfiles(g *globals) (*agents.Set, agents.LoadOptions, error) {
	opts, err := profileOptions(g)
	if err != nil {
		return nil, opts, err
	}
	return agents.Load(opts), opts, nil
}

// profileJSON is how `ink agents ls --json` and `ink agents show --json`
// print a profile. tools is null when the agent gets its parent's tools.
func profileJSON(p agents.Profile) map[string]any {
	m := map[string]any{
		"kind": "agent", "name": p.Name, "description": p.Description, "source": p.Source, "dir": p.Dir,
		"tools": p.Tools, "roleSha256": p.RoleSHA256, "body": p.Body,
	}
	if p.Model != "" {
		m["model"] = p.Model
	}
	if p.Timeout > 0 {
		m["timeoutSeconds"] = int64(p.Timeout.Seconds())
	}
	if p.Worktree != nil {
		m["worktree"] = *p.Worktree
	}
	if p.Thinking != "" {
		m["thinking"] = p.Thinking
	}
	if p.MaxTurns > 0 {
		m["maxTurns"] = p.MaxTurns
	}
	if p.ContextWindow > 0 {
		m["contextWindow"] = p.ContextWindow
	}
	if p.Slug != "" && p.Slug != p.Name {
		m["slug"] = p.Slug
	}
	if len(p.DroppedTools) > 0 {
		m["droppedTools"] = p.DroppedTools
	}
	if len(p.UnknownTools) > 0 {
		m["unknownTools"] = p.UnknownTools
	}
	if p.Sandbox != "" {
		m["sandbox"] = p.Sandbox
	}
	if p.Writable != nil {
		m["writable"] = p.Writable
	}
	if p.Network != nil {
		m["network"] = *p.Network
	}
	if len(p.UnknownFields) > 0 {
		m["unknownFields"] = p.UnknownFields
	}
	if p.StrictYAML != nil {
		m["strictYAML"] = p.StrictYAML.Error()
	}
	if len(p.Notes) > 0 {
		m["notes"] = p.Notes
	}
	if len(p.Extra) > 0 {
		m["extra"] = p.Extra
	}
	return m
}

func newAgentsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "List, show and check agent profiles"}
	cmd.AddCommand(uses(&cobra.Command{
		Use:   "ls",
		Short: "List the agent profiles this directory sees (winners, shadowed files, skipped files, untrusted projects)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, opts, err := loadProfiles(g)
			if err != nil {
				return err
			}
			if g.json {
				return agentsJSON(os.Stdout, set)
			}
			agentsTable(os.Stdout, set, opts)
			return nil
		},
	}, lookFlags...))
	cmd.AddCommand(uses(&cobra.Command{
		Use:   "show NAME",
		Short: "Show one profile as ink reads it",
		Args:  oneArg("an agent name", "list them with `ink agents ls`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, _, err := loadProfiles(g)
			if err != nil {
				return err
			}
			p, err := set.Lookup(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			cwd, err := g.workDir()
			if err != nil {
				return err
			}
			needs := orchestrator.Ceiling(orchestrator.Config{Cwd: cwd}).Needs(orchestrator.ProfileAsk(&p))
			aliases, _ := set.ModelAliases()
			if g.json {
				m := profileJSON(p)
				if len(needs) > 0 {
					list := make([]map[string]string, len(needs))
					for i, n := range needs {
						list[i] = map[string]string{"field": n.What, "why": n.Why, "flag": n.Flag}
					}
					m["needs"] = list
				}
				if on, elsewhere, ok := aliasResolution(p, aliases); ok {
					m["modelAlias"] = map[string]string{"anthropic": on, "elsewhere": elsewhere}
				}
				return json.NewEncoder(os.Stdout).Encode(m)
			}
			showProfile(os.Stdout, p, aliases, needs)
			return nil
		},
	}, lookFlags...))
	cmd.AddCommand(newAgentsCheckCmd(g))
	return cmd
}

// newAgentsCheckCmd is `ink agents check [DIR] [--strict] [--json]`.
func newAgentsCheckCmd(g *globals) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "check [DIR]",
		Short: "Report every problem in the profiles of DIR (default: every profile directory of this project) and the model alias file; exit 1 on errors",
		Long: "ink agents check reads every profile file (*.md, in subdirectories too) of DIR, or of every profile\n" +
			"directory of this project, and lists every problem of every file, by line: errors (the file is\n" +
			"skipped) and warnings (the file loads, but something is dropped or ignored: tools ink lacks,\n" +
			"unknown fields, Claude model aliases that fall back to the parent's model, duplicate names).\n" +
			"It exits 1 when there is an error; warnings alone exit 0. --strict also reports, as errors,\n" +
			"frontmatter that is not valid YAML but that ink reads line by line as Claude Code does.\n" +
			"--json prints one JSON object per line, as `ink agents ls --json` does: each problem, then a summary.",
		Args: atMostOneArg("one directory of agent profiles"),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			var dirs, searched []string
			if len(args) == 1 {
				dir, err := filepath.Abs(args[0])
				if err != nil {
					return usageErr("check %s: %v", args[0], err)
				}
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return usageErr("check %s: no such directory; give a directory of agent profiles (such as .ink/agents)", args[0])
				}
				dirs = []string{dir}
			} else {
				opts, err := profileOptions(g)
				if err != nil {
					return err
				}
				// Every directory that exists, untrusted project ones
				// included: reading a profile to check it runs nothing.
				searched = opts.Dirs()
				for _, d := range searched {
					if fi, err := os.Stat(d); err == nil && fi.IsDir() {
						dirs = append(dirs, d)
					}
				}
			}
			checkOpts := agents.CheckOptions{Strict: strict}
			if g.model != "" {
				b, err := g.flagBinding()
				if err != nil {
					return usageErr("--model: %v", err)
				}
				checkOpts.Parent = &b
			}
			aliases, aliasErr := agents.LoadModelAliases(home, os.Getenv)
			checkOpts.Aliases = aliases
			var problems []agents.Problem
			if aliasErr != nil {
				problems = append(problems, agents.Problem{Path: aliases.File, Reason: aliasErr.Error()})
			}
			for _, d := range dirs {
				problems = append(problems, agents.Check(d, checkOpts)...)
			}
			errs, warnings := 0, 0
			for _, p := range problems {
				if p.Warning {
					warnings++
				} else {
					errs++
				}
			}
			if g.json {
				if err := checkJSON(os.Stdout, dirs, searched, aliases.File, problems, errs, warnings); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Println(checkLine(p))
				}
				switch {
				case len(dirs) == 0 && errs == 0:
					fmt.Printf("no profile directories exist; searched %s\n", strings.Join(searched, ", "))
				case errs == 0 && warnings == 0:
					fmt.Printf("no problems in %s\n", strings.Join(dirs, ", "))
				case errs == 0:
					fmt.Printf("%s in %s; no errors: every file loads\n", count(warnings, "warning"), strings.Join(dirs, ", "))
				}
			}
			if errs > 0 {
				where := strings.Join(dirs, ", ")
				if where == "" {
					where = aliases.File
				}
				msg := fmt.Sprintf("%s in %s; fix them and run `ink agents check` again", count(errs, "error"), where)
				if warnings > 0 {
					msg = fmt.Sprintf("%s and %s in %s; fix the errors and run `ink agents check` again", count(errs, "error"), count(warnings, "warning"), where)
				}
				return &exitError{code: exitFailed, msg: msg}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "also report frontmatter that strict YAML rejects (ink and Claude Code still read it line by line)")
	return uses(cmd, "cwd", "json", "model")
}

// checkLine renders one problem as `ink agents check` prints it: errors as
// PATH:LINE: reason, warnings as PATH:LINE: warning: reason.
func checkLine(p agents.Problem) string {
	if !p.Warning {
		return p.String()
	}
	w := p
	w.Reason = "warning: " + p.Reason
	return w.String()
}

// checkJSON prints what `ink agents check --json` finds as `ink agents ls
// --json` prints: one object per line, every problem (kind "problem",
// with its severity), then a summary (kind "summary": the directories
// read, the counts).
func checkJSON(w io.Writer, dirs, searched []string, aliasFile string, problems []agents.Problem, errs, warnings int) error {
	type problemJSON struct {
		Kind     string `json:"kind"`
		Path     string `json:"path"`
		Line     int    `json:"line,omitempty"`
		Severity string `json:"severity"`
		Reason   string `json:"reason"`
		Text     string `json:"text"`
	}
	type summaryJSON struct {
		Kind       string   `json:"kind"`
		Dirs       []string `json:"dirs"`
		Searched   []string `json:"searched,omitempty"`
		ModelsFile string   `json:"modelsFile,omitempty"`
		Errors     int      `json:"errors"`
		Warnings   int      `json:"warnings"`
	}
	enc := json.NewEncoder(w)
	for _, p := range problems {
		if err := enc.Encode(problemJSON{Kind: "problem", Path: p.Path, Line: p.Line, Severity: p.Severity(), Reason: p.Reason, Text: checkLine(p)}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	sum := summaryJSON{Kind: "summary", Dirs: dirs, Searched: searched, ModelsFile: aliasFile, Errors: errs, Warnings: warnings}
	if sum.Dirs == nil {
		sum.Dirs = []string{}
	}
	if err := enc.Encode(sum); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// count renders "1 error", "3 errors".
func count(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, orchestrator.Plural(n, noun, noun+"s"))
}

// agentsJSON prints one object per line: every loaded agent, then every
// shadowed file, skipped file and untrusted project, each with its kind.
func agentsJSON(w io.Writer, set *agents.Set) error {
	enc := json.NewEncoder(w)
	var out []any
	for _, p := range set.All() {
		out = append(out, profileJSON(p))
	}
	for _, s := range set.Shadowed() {
		out = append(out, map[string]any{"kind": "shadowed", "name": s.Name, "source": s.Shadowed, "winner": s.Winner})
	}
	for _, pr := range set.Problems() {
		out = append(out, map[string]any{"kind": "skipped", "source": pr.Path, "line": pr.Line, "reason": pr.Reason, "text": pr.String()})
	}
	if root, n := set.Untrusted(); n > 0 {
		out = append(out, map[string]any{"kind": "untrusted", "root": root, "files": n, "text": set.UntrustedMessage()})
	}
	for _, v := range out {
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// agentsTable prints the loaded agents, the files they shadow, the files
// that were skipped and why, and project agents that are not trusted.
func agentsTable(w io.Writer, set *agents.Set, opts agents.LoadOptions) {
	all := set.All()
	_, untrusted := set.Untrusted()
	switch {
	case len(all) > 0:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTOOLS\tMODEL\tTIMEOUT\tSOURCE")
		for _, p := range all {
			tools := "(parent's)"
			if p.Tools != nil {
				tools = strings.Join(p.Tools, ",")
				if tools == "" {
					tools = "(none)"
				}
			}
			timeout := "-"
			if p.Timeout > 0 {
				timeout = p.Timeout.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, tools, dash(p.Model), timeout, p.Source)
		}
		tw.Flush()
	case untrusted > 0:
		fmt.Fprintln(w, "no agents are loaded")
	default:
		fmt.Fprintf(w, "no agents are defined; searched %s. Define one in %s/NAME.md: a line ---, name: and description:, a line ---, then its instructions\n",
			strings.Join(opts.Dirs(), ", "), filepath.Join(opts.InkHome, "agents"))
	}
	for _, p := range all {
		if len(p.DroppedTools) > 0 {
			fmt.Fprintf(w, "dropped: agent %s runs without %s (tools ink lacks; `ink agents show %s` says why)\n", p.Name, strings.Join(p.DroppedTools, ", "), quoteName(p.Name))
		}
	}
	for _, s := range set.Shadowed() {
		fmt.Fprintf(w, "shadowed: %s (agent %s) is hidden by %s\n", s.Shadowed, s.Name, s.Winner)
	}
	for _, pr := range set.Problems() {
		fmt.Fprintf(w, "skipped: %s\n", pr)
	}
	for _, pr := range set.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", pr)
	}
	if msg := set.UntrustedMessage(); msg != "" {
		fmt.Fprintf(w, "untrusted: %s\n", msg)
	}
	if _, err := set.ModelAliases(); err != nil {
		fmt.Fprintf(w, "model aliases: %v\n", err)
	}
}

// quoteName quotes an agent name for a shell command line when it holds
// spaces.
func quoteName(name string) string {
	if strings.ContainsAny(name, " \t'\"") {
		return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
	}
	return name
}

// aliasResolution says what a profile's Claude model alias runs on: on
// anthropic, and elsewhere (the user's mapping, or the parent's model).
// ok is false when its model is not an alias.
func aliasResolution(p agents.Profile, aliases *agents.ModelAliases) (onAnthropic, elsewhere string, ok bool) {
	alias := strings.ToLower(strings.TrimSpace(p.Model))
	id, ok := agents.ClaudeModelAliases[alias]
	if !ok {
		return "", "", false
	}
	elsewhere = "the parent's model (nothing maps it)"
	if b, from, mapped, _ := aliases.Lookup(alias); mapped {
		elsewhere = b.String() + " (from " + from + ")"
	}
	return "anthropic/" + id, elsewhere, true
}

// showProfile prints one profile: its fields, ink's notes, then its body.
// needs are what the profile's sandbox fields ask for beyond ink's
// defaults (profileNeeds).
func showProfile(w io.Writer, p agents.Profile, aliases *agents.ModelAliases, needs []sandbox.Need) {
	desc := strings.ReplaceAll(strings.TrimRight(p.Description, "\n"), "\n", "\n             ")
	fmt.Fprintf(w, "name:        %s\n", p.Name)
	if p.Slug != "" && p.Slug != p.Name {
		fmt.Fprintf(w, "also named:  %s\n", p.Slug)
	}
	fmt.Fprintf(w, "description: %s\nsource:      %s\n", desc, p.Source)
	switch {
	case p.Tools == nil:
		fmt.Fprintf(w, "tools:       (the parent's)\n")
	case len(p.Tools) == 0:
		fmt.Fprintf(w, "tools:       (none)\n")
	default:
		fmt.Fprintf(w, "tools:       %s\n", strings.Join(p.Tools, ", "))
	}
	if on, elsewhere, ok := aliasResolution(p, aliases); ok {
		fmt.Fprintf(w, "model:       %s (%s on anthropic; elsewhere %s)\n", p.Model, on, elsewhere)
	} else if p.Model != "" {
		fmt.Fprintf(w, "model:       %s\n", p.Model)
	}
	if p.Timeout > 0 {
		fmt.Fprintf(w, "timeout:     %s\n", p.Timeout)
	}
	if p.Worktree != nil {
		fmt.Fprintf(w, "worktree:    %v\n", *p.Worktree)
	}
	if p.Thinking != "" {
		fmt.Fprintf(w, "thinking:    %s\n", p.Thinking)
	}
	if p.MaxTurns > 0 {
		fmt.Fprintf(w, "maxTurns:    %d\n", p.MaxTurns)
	}
	if p.ContextWindow > 0 {
		fmt.Fprintf(w, "context:     %d tokens\n", p.ContextWindow)
	}
	if p.Sandbox != "" {
		fmt.Fprintf(w, "sandbox:     %s\n", p.Sandbox)
	} else {
		fmt.Fprintf(w, "sandbox:     (the run's)\n")
	}
	if p.Writable != nil {
		fmt.Fprintf(w, "writable:    %s\n", strings.Join(p.Writable, ", "))
	}
	if p.Network != nil {
		fmt.Fprintf(w, "network:     %v\n", *p.Network)
	}
	for _, n := range needs {
		fmt.Fprintf(w, "needs:       %s\n", n)
	}
	fmt.Fprintf(w, "sha256:      %s\n", p.RoleSHA256)
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note:        %s\n", n)
	}
	fmt.Fprintf(w, "\n%s\n", p.Body)
}

func newTrustCmd(g *globals) *cobra.Command {
	var list bool
	var revoke string
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a project root so its .ink/agents and .claude/agents profiles load (--list, --revoke DIR)",
		Long: "ink trust [DIR] trusts DIR (default: the current project's root), so that the agent profiles in " +
			"DIR/.claude/agents and DIR/.ink/agents load. The list is kept in $INK_HOME/trust.json.\n" +
			"ink trust --list prints the trusted roots; ink trust --revoke DIR stops trusting DIR.",
		Args: atMostOneArg("one directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			revoking := cmd.Flags().Changed("revoke")
			switch {
			case list && (revoking || len(args) > 0):
				return usageErr("--list takes no directory and no --revoke; run `ink trust --list` alone")
			case revoking && len(args) > 0:
				return usageErr("give the directory once: `ink trust --revoke DIR`")
			case revoking && strings.TrimSpace(revoke) == "":
				return usageErr("--revoke needs a directory: `ink trust --revoke DIR` (see `ink trust --list`)")
			}
			home, err := inkHome()
			if err == nil && !list {
				err = checkHomeWritable(home)
			}
			if err != nil {
				return err
			}
			t, err := agents.LoadTrust(home)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			switch {
			case list:
				roots := t.List()
				if g.json {
					if roots == nil {
						roots = []string{}
					}
					return json.NewEncoder(os.Stdout).Encode(map[string]any{"trusted": roots, "file": t.Path()})
				}
				if len(roots) == 0 {
					fmt.Fprintln(os.Stderr, "ink: no project is trusted; trust one with `ink trust DIR`")
				}
				for _, r := range roots {
					fmt.Println(r)
				}
				return nil
			case revoking:
				dir, err := filepath.Abs(revoke)
				if err != nil {
					return usageErr("--revoke %s: %v", revoke, err)
				}
				if err := t.Revoke(dir); err != nil {
					if errors.Is(err, agents.ErrNotTrusted) {
						return usageErr("%s is not trusted, so there is nothing to revoke; `ink trust --list` shows the trusted roots", dir)
					}
					return &exitError{code: exitFailed, msg: err.Error()}
				}
				if g.json {
					return printJSON(map[string]any{"revoked": dir, "file": t.Path()})
				}
				fmt.Printf("no longer trusted: %s; its project agents no longer load\n", dir)
				return nil
			}
			var dir string
			if len(args) == 1 {
				dir = args[0]
			} else {
				cwd, err := g.workDir()
				if err != nil {
					return err
				}
				dir = agents.ProjectRoot(cwd)
			}
			if err := t.Add(dir); err != nil {
				return usageErr("%v", err)
			}
			real, _ := filepath.EvalSymlinks(dir)
			real, _ = filepath.Abs(real)
			if g.json {
				return printJSON(map[string]any{"trusted": real, "file": t.Path(),
					"agentDirs": []string{filepath.Join(real, ".claude", "agents"), filepath.Join(real, ".ink", "agents")}})
			}
			fmt.Printf("trusted %s: the agent profiles in %s and %s now load\n", real,
				filepath.Join(real, ".claude", "agents"), filepath.Join(real, ".ink", "agents"))
			if root := agents.ProjectRoot(real); root != real {
				fmt.Fprintf(os.Stderr, "ink: note: %s is inside the project %s, whose agents load only when %s itself is trusted (`ink trust %s`)\n", real, root, root, root)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list trusted project roots")
	cmd.Flags().StringVar(&revoke, "revoke", "", "stop trusting `DIR`")
	return uses(cmd, lookFlags...)
}

// warnRelay passes the profile watcher's warnings (skipped files, kept
// versions, untrusted projects) on as `warning` events. Warnings given
// before the orchestrator exists wait for it, so the initial load's
// warnings reach --json too. It is safe for concurrent use: the watcher
// calls warn from its own goroutine.
type warnRelay struct {
	mu      sync.Mutex
	orc     *orchestrator.Orchestrator
	pending []string
}

func (r *warnRelay) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orc == nil {
		r.pending = append(r.pending, msg)
		return
	}
	r.orc.Warn("ink", msg)
}

// attach emits the pending warnings through orc and every later one at once.
func (r *warnRelay) attach(orc *orchestrator.Orchestrator) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orc = orc
	for _, msg := range r.pending {
		orc.Warn("ink", msg)
	}
	r.pending = nil
}
