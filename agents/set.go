package agents

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/inkdev/ink/model"
)

// LoadOptions says where Load looks for profiles.
type LoadOptions struct {
	// Home is the user's home directory ($HOME); profiles in
	// Home/.claude/agents. Empty skips that directory.
	Home string
	// InkHome is ink's home ($INK_HOME, by default ~/.ink); profiles in
	// InkHome/agents. Empty skips that directory.
	InkHome string
	// ProjectRoot is the project the agents work in (see ProjectRoot);
	// profiles in ProjectRoot/.claude/agents and ProjectRoot/.ink/agents.
	// Empty skips both.
	ProjectRoot string
	// Trust lists the trusted project roots. Project directories load only
	// when ProjectRoot is trusted or is Home itself. nil trusts none.
	Trust *Trust
	// Env reads the INK_MODEL_<ALIAS> variables (see ModelAliases); nil
	// reads the process environment.
	Env func(string) string
}

// Shadow records a profile name defined by more than one file: Winner is the
// source that is used, Shadowed the one it hides (the earlier directory in
// load order, or within one directory the earlier file in walk order).
type Shadow struct {
	Name     string
	Winner   string
	Shadowed string
}

// Set is the profiles loaded from the profile directories at one moment.
// A Set never changes after Load returns it, so it is safe for concurrent
// use; its methods return copies.
type Set struct {
	byName         map[string]Profile
	bySlug         map[string]string // slug -> name, for slugs that name one agent
	names          []string
	shadowed       []Shadow
	problems       []Problem
	warnings       []Problem
	dirs           []string
	watchDirs      []string
	inkAgentsDir   string
	untrustedRoot  string
	untrustedDirs  []string
	untrustedCount int
	aliases        *ModelAliases
	aliasErr       error
}

// profileDir is one directory Load reads.
type profileDir struct {
	path    string
	project bool
}

// Dirs returns the profile directories for opts, in load order (later ones
// win on a name clash), whether or not they exist or are trusted.
func (opts LoadOptions) Dirs() []string {
	var dirs []string
	for _, d := range opts.profileDirs() {
		dirs = append(dirs, d.path)
	}
	return dirs
}

func (opts LoadOptions) profileDirs() []profileDir {
	var dirs []profileDir
	add := func(base string, project bool, parts ...string) {
		if base == "" {
			return
		}
		if abs, err := filepath.Abs(base); err == nil {
			base = abs
		}
		dirs = append(dirs, profileDir{path: filepath.Join(append([]string{base}, parts...)...), project: project})
	}
	add(opts.InkHome, false, "agents")
	add(opts.Home, false, ".claude", "agents")
	add(opts.ProjectRoot, true, ".claude", "agents")
	add(opts.ProjectRoot, true, ".ink", "agents")
	return dirs
}

// projectTrusted reports whether the project directories may load: the
// project root is trusted, or it is the home directory itself.
func (opts LoadOptions) projectTrusted() bool {
	if opts.ProjectRoot == "" {
		return false
	}
	if opts.Home != "" && sameDir(opts.ProjectRoot, opts.Home) {
		return true
	}
	return opts.Trust.Trusted(opts.ProjectRoot)
}

// Load reads every profile directory of opts, each recursively (see
// LoadOptions.Dirs for the order; a later file wins on a name clash, and
// its Notes name the files it hides). A file that cannot be parsed is
// skipped and reported in Problems; the rest load. Missing directories are
// fine; symbolic link loops are reported in Warnings. Each profile's
// writable: directories are made absolute. The model alias mapping is read
// with the profiles (Set.ResolveModel); a bad one is kept as an error that
// only aliases needing it meet. Load never fails as a whole; it is safe for
// concurrent use.
func Load(opts LoadOptions) *Set {
	return load(opts, nil).set
}

// loaded is the outcome of one load.
type loaded struct {
	set *Set
	// good holds, by absolute source path, every profile in use: parsed now,
	// or kept from before (shadowed ones included).
	good map[string]Profile
	// kept are the problems of files whose previous version stays in use.
	kept []Problem
}

// load is Load with a memory: when a file fails to parse and previous holds
// a profile from that same source path, that profile stays in use instead of
// being dropped, and its problem is reported in kept.
func load(opts LoadOptions, previous map[string]Profile) loaded {
	set := &Set{byName: map[string]Profile{}, bySlug: map[string]string{}, inkAgentsDir: displayDir(opts)}
	set.aliases, set.aliasErr = LoadModelAliases(opts.InkHome, opts.Env)
	out := loaded{set: set, good: map[string]Profile{}}
	sources := map[string][]string{} // name -> sources in load order
	seenDirs := map[string]bool{}
	trusted := opts.projectTrusted()
	for _, dir := range opts.profileDirs() {
		key := realDir(dir.path)
		if seenDirs[key] {
			continue // e.g. the project is $HOME: its .claude/agents is loaded once
		}
		seenDirs[key] = true
		tree, problem := walkProfiles(dir.path)
		if problem != nil {
			set.problems = append(set.problems, *problem)
			continue
		}
		if dir.project && !trusted {
			if len(tree.files) > 0 {
				set.untrustedRoot = opts.ProjectRoot
				set.untrustedDirs = append(set.untrustedDirs, dir.path)
				set.untrustedCount += len(tree.files)
			}
			continue
		}
		set.dirs = append(set.dirs, dir.path)
		set.watchDirs = append(set.watchDirs, tree.dirs...)
		set.warnings = append(set.warnings, tree.warnings...)
		for _, path := range tree.files {
			p, err := readProfile(path)
			if errors.Is(err, errNotAProfile) {
				continue
			}
			if err != nil {
				problem := asProblem(path, err)
				set.problems = append(set.problems, problem)
				old, ok := previous[sourceKey(path)]
				if !ok {
					continue
				}
				out.kept = append(out.kept, problem)
				p = old
			}
			p.Dir = dir.path
			p.Writable = resolveWritable(p.Writable, opts)
			out.good[p.Source] = p
			sources[p.Name] = append(sources[p.Name], p.Source)
			set.byName[p.Name] = p
		}
	}
	for name := range set.byName {
		set.names = append(set.names, name)
	}
	sortNames(set.names)
	for _, name := range set.names {
		list := sources[name]
		winner := list[len(list)-1]
		if len(list) > 1 {
			p := set.byName[name]
			p.Notes = append(p.Notes, fmt.Sprintf("agent %q is also defined in %s; this file (%s) is used, as the later one in load order", name, strings.Join(list[:len(list)-1], ", "), winner))
			set.byName[name] = p
		}
		for _, shadowed := range list[:len(list)-1] {
			set.shadowed = append(set.shadowed, Shadow{Name: name, Winner: winner, Shadowed: shadowed})
		}
	}
	// A slug names an agent when no agent has it as its name and no other
	// agent has the same slug.
	slugCount := map[string]int{}
	for _, name := range set.names {
		slugCount[set.byName[name].Slug]++
	}
	for _, name := range set.names {
		slug := set.byName[name].Slug
		if slug == "" || slug == name || slugCount[slug] > 1 {
			continue
		}
		if _, taken := set.byName[slug]; taken {
			continue
		}
		set.bySlug[slug] = name
	}
	return out
}

// sortNames sorts agent names as people read a list: ignoring case, then
// byte order.
func sortNames(names []string) {
	sort.Slice(names, func(i, j int) bool {
		a, b := strings.ToLower(names[i]), strings.ToLower(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
}

// resolveWritable makes a profile's writable: directories absolute: "~/"
// against the home directory, relative ones against the project root.
func resolveWritable(dirs []string, opts LoadOptions) []string {
	if dirs == nil {
		return nil
	}
	out := make([]string, 0, len(dirs))
	for _, dir := range dirs {
		switch {
		case dir == "~" && opts.Home != "":
			dir = opts.Home
		case strings.HasPrefix(dir, "~/") && opts.Home != "":
			dir = filepath.Join(opts.Home, dir[2:])
		case !filepath.IsAbs(dir) && opts.ProjectRoot != "":
			dir = filepath.Join(opts.ProjectRoot, dir)
		}
		out = appendUnique(out, filepath.Clean(dir))
	}
	return out
}

// displayDir is where a user defines personal agents, as messages show it:
// "~/.ink/agents" when INK_HOME is the default or unknown.
func displayDir(opts LoadOptions) string {
	if opts.InkHome == "" {
		return "~/.ink/agents"
	}
	dir := opts.profileDirs()[0].path
	if opts.Home != "" {
		if rel, err := filepath.Rel(realDir(opts.Home), realDir(filepath.Dir(dir))); err == nil && rel == ".ink" {
			return "~/.ink/agents"
		}
	}
	return dir
}

// readProfile reads and parses one file.
func readProfile(path string) (Profile, error) {
	data, err := readProfileFile(path)
	if err != nil {
		return Profile{}, err
	}
	if collectionDoc(path, data) {
		return Profile{}, errNotAProfile
	}
	return Parse(path, data)
}

// sourceKey is how a file is remembered across reloads.
func sourceKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// realDir resolves symlinks in dir when it exists, else cleans it.
func realDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

func sameDir(a, b string) bool { return realDir(a) == realDir(b) }

// Get returns the profile named name, as written in its file or as its
// slug (see Slug), when the slug names one agent only.
func (s *Set) Get(name string) (Profile, bool) {
	if s == nil {
		return Profile{}, false
	}
	if p, ok := s.byName[name]; ok {
		return p.clone(), true
	}
	if full, ok := s.bySlug[Slug(name)]; ok {
		return s.byName[full].clone(), true
	}
	// An agent whose name is the slug of name (a name with a '/' goes by
	// its slug).
	if p, ok := s.byName[Slug(name)]; ok {
		return p.clone(), true
	}
	return Profile{}, false
}

// ResolveModel resolves p's model against its parent's binding with the
// model aliases loaded with this set ($INK_HOME/models.yaml and the
// INK_MODEL_ variables as of the load); see the package function
// ResolveModel.
func (s *Set) ResolveModel(p Profile, parent model.Binding) (model.Binding, string, error) {
	var aliases *ModelAliases
	if s != nil {
		aliases = s.aliases
	}
	return ResolveModel(p, parent, aliases)
}

// ModelAliases returns the model aliases loaded with this set, and why
// they could not be read in full (nil when they could).
func (s *Set) ModelAliases() (*ModelAliases, error) {
	if s == nil {
		return nil, nil
	}
	return s.aliases, s.aliasErr
}

// Warnings returns what was read but not followed while loading (symbolic
// link loops, unreadable subdirectories), in load order.
func (s *Set) Warnings() []Problem {
	if s == nil {
		return nil
	}
	return append([]Problem(nil), s.warnings...)
}

// All returns every loaded profile, sorted by name (ignoring case).
func (s *Set) All() []Profile {
	if s == nil {
		return nil
	}
	all := make([]Profile, 0, len(s.names))
	for _, name := range s.names {
		all = append(all, s.byName[name].clone())
	}
	return all
}

// Names returns the names of the loaded profiles, sorted (ignoring case).
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.names...)
}

// Shadowed returns every file hidden by a later file of the same name,
// sorted by name, then in load order.
func (s *Set) Shadowed() []Shadow {
	if s == nil {
		return nil
	}
	return append([]Shadow(nil), s.shadowed...)
}

// Problems returns every file that was skipped (or, during hot reload, whose
// previous version was kept), in load order.
func (s *Set) Problems() []Problem {
	if s == nil {
		return nil
	}
	return append([]Problem(nil), s.problems...)
}

// Dirs returns the directories whose profiles were read, in load order
// (untrusted project directories are not among them).
func (s *Set) Dirs() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.dirs...)
}

// Untrusted returns the project root and the number of profile files that
// were not loaded because the project is not trusted; count is 0 when there
// are none.
func (s *Set) Untrusted() (root string, count int) {
	if s == nil {
		return "", 0
	}
	return s.untrustedRoot, s.untrustedCount
}

// UntrustedMessage says which project agents were not loaded and how to load
// them, or returns "" when there are none.
func (s *Set) UntrustedMessage() string {
	if s == nil || s.untrustedCount == 0 {
		return ""
	}
	root := s.untrustedRoot
	return fmt.Sprintf("project agents in %s are not loaded because %s is not trusted; run `ink trust %s` to load them",
		strings.Join(s.untrustedDirs, " and "), root, root)
}

func (p Profile) clone() Profile {
	if p.Tools != nil {
		p.Tools = append([]string{}, p.Tools...)
	}
	if p.Notes != nil {
		p.Notes = append([]string(nil), p.Notes...)
	}
	for _, list := range []*[]string{&p.UnknownTools, &p.DroppedTools, &p.UnknownFields, &p.Writable} {
		if *list != nil {
			*list = append([]string(nil), *list...)
		}
	}
	if p.StrictYAML != nil {
		pr := *p.StrictYAML
		p.StrictYAML = &pr
	}
	if p.Worktree != nil {
		w := *p.Worktree
		p.Worktree = &w
	}
	if p.Network != nil {
		n := *p.Network
		p.Network = &n
	}
	if p.Extra != nil {
		extra := make(map[string]any, len(p.Extra))
		for k, v := range p.Extra {
			extra[k] = v
		}
		p.Extra = extra
	}
	return p
}
