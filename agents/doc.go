// Package agents owns ink's agent profiles: the Markdown files with a YAML
// frontmatter that name a child agent, describe it, narrow its tools and pick
// its model, timeout, worktree and thinking level.
//
// It parses profiles (Parse), including Claude Code files as they are;
// resolves a profile's model against its parent's binding (ResolveModel);
// loads the four profile directories in order, later ones winning on a name
// clash (Load), and finds one by name with an error that says what to do
// when it is missing (Set.Lookup); keeps the list of trusted project roots in
// $INK_HOME/trust.json (LoadTrust); renders the block that advertises agents
// in the main agent's system prompt (Advertise); lints a directory (Check);
// and reloads profiles when their directories change (Watch).
//
// The package imports no other ink package except model, for bindings.
package agents
