// Package agents owns ink's agent profiles: the Markdown files with a YAML
// frontmatter that name a child agent, describe it, narrow its tools and pick
// its model, timeout, worktree, thinking level and bash sandbox.
//
// It reads profiles as Claude Code reads them, so that agents installed for
// Claude Code work unchanged:
//   - Load reads four directories in order, later ones winning on a name
//     clash (~/.ink/agents, ~/.claude/agents, <project>/.claude/agents,
//     <project>/.ink/agents), each recursively (**/*.md), following
//     symbolic links to directories once (a loop is warned about, not
//     followed). Project directories load only when the project is trusted
//     (LoadTrust, $INK_HOME/trust.json).
//   - Parse reads strict YAML and, where that fails, the top-level
//     "key: value" lines one by one (a key given again keeps its first
//     value, with a note); a name may hold spaces (it is also reached by
//     its Slug), and a name with a '/' goes by its Slug; a closing fence
//     may be a long rule of dashes.
//     Lint lists every problem of a file; Check lists them for a directory,
//     errors apart from warnings.
//   - Claude Code tool names map to ink's; the tools ink lacks are dropped
//     with one note, never refused (Profile.ChildTools narrows a child's
//     pool at task time the same way).
//   - Claude Code's model aliases resolve to the models Claude Code uses on
//     anthropic, and elsewhere through $INK_HOME/models.yaml or the
//     INK_MODEL_<ALIAS> variables, else to the parent's model with a note
//     (ResolveModel, ModelAliases).
//
// It also finds a profile by name, or says which names are closest and why
// a file of that name was skipped (Set.Lookup); renders the block that names
// every agent in the main agent's system prompt within a budget (Advertise);
// warns about skipped files once per file version, remembered in
// $INK_HOME/agent-warnings.json (Announce); reloads profiles when their
// directories change (Watch); and reads the project's own instructions for
// coding agents, AGENTS.md and CLAUDE.md at the project root and in the
// working directory (ProjectContext), which the supervisor puts into every
// system prompt.
//
// The package imports no other ink package except model, for bindings.
package agents
