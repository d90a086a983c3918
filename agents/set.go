package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
}

// Shadow records a profile name defined by more than one file: Winner is the
// source that is used, Shadowed the one it hides.
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
	names          []string
	shadowed       []Shadow
	problems       []Problem
	dirs           []string
	inkAgentsDir   string
	untrustedRoot  string
	untrustedDirs  []string
	untrustedCount int
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

// Load reads every profile directory of opts. A file that cannot be parsed
// is skipped and reported in Problems; the rest load. Missing directories
// are fine. Load never fails as a whole; it is safe for concurrent use.
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
	set := &Set{byName: map[string]Profile{}, inkAgentsDir: displayDir(opts)}
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
		files, problem := profileFiles(dir.path)
		if problem != nil {
			set.problems = append(set.problems, *problem)
			continue
		}
		if dir.project && !trusted {
			if len(files) > 0 {
				set.untrustedRoot = opts.ProjectRoot
				set.untrustedDirs = append(set.untrustedDirs, dir.path)
				set.untrustedCount += len(files)
			}
			continue
		}
		set.dirs = append(set.dirs, dir.path)
		for _, path := range files {
			p, err := readProfile(path)
			if err != nil {
				var problem Problem
				if !errors.As(err, &problem) {
					problem = Problem{Path: path, Reason: err.Error()}
				}
				set.problems = append(set.problems, problem)
				old, ok := previous[sourceKey(path)]
				if !ok {
					continue
				}
				out.kept = append(out.kept, problem)
				p = old
			}
			p.Dir = dir.path
			out.good[p.Source] = p
			sources[p.Name] = append(sources[p.Name], p.Source)
			set.byName[p.Name] = p
		}
	}
	for name := range set.byName {
		set.names = append(set.names, name)
	}
	sort.Strings(set.names)
	for _, name := range set.names {
		list := sources[name]
		winner := list[len(list)-1]
		for _, shadowed := range list[:len(list)-1] {
			set.shadowed = append(set.shadowed, Shadow{Name: name, Winner: winner, Shadowed: shadowed})
		}
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
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, Problem{Path: path, Reason: fmt.Sprintf("cannot read the file: %v", unwrapPathError(err))}
	}
	return Parse(path, data)
}

// profileFiles lists the *.md files of dir, sorted, skipping hidden files
// (editor locks and swap files) and directories. A missing directory has no
// files; an unreadable one is a problem.
func profileFiles(dir string) ([]string, *Problem) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Problem{Path: dir, Reason: fmt.Sprintf("cannot read the agents directory: %v", unwrapPathError(err))}
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if e.IsDir() {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			if info, err := os.Stat(path); err == nil && info.IsDir() {
				continue
			}
		}
		files = append(files, path)
	}
	sort.Strings(files) // ReadDir sorts already; keep it explicit
	return files, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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

// Get returns the profile named name.
func (s *Set) Get(name string) (Profile, bool) {
	if s == nil {
		return Profile{}, false
	}
	p, ok := s.byName[name]
	return p.clone(), ok
}

// All returns every loaded profile, sorted by name.
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

// Names returns the names of the loaded profiles, sorted.
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
	if p.UnknownTools != nil {
		p.UnknownTools = append([]string(nil), p.UnknownTools...)
	}
	if p.Worktree != nil {
		w := *p.Worktree
		p.Worktree = &w
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
