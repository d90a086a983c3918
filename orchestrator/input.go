package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/model/script"
	"github.com/inkdev/ink/worktree"
)

// InputArg names the argument of a task call (a flag of `ink task`) that
// an InputError faults: a closed set.
type InputArg string

const (
	// ArgAgent is the agent argument (--agent): a profile nobody defined,
	// or whose model cannot run.
	ArgAgent InputArg = "agent"
	// ArgWorktree is a worktree asked for (the worktree argument,
	// --worktree, or a profile's worktree: true) where none can be made.
	ArgWorktree InputArg = "worktree"
)

// InputError is a new child's input refused by the rules the supervisor
// holds every task call to (CheckTask for a front end, planChild for the
// task tool). Err says what was wrong and how to fix it. It is bad input
// (errors.Is(err, ErrBadInput)), except a worktree git could not be asked
// about.
type InputError struct {
	Arg InputArg
	// Why, for ArgWorktree, is the profile that asked for the worktree
	// ("" when the call's own worktree argument did).
	Why string
	Err error
}

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap gives the cause (worktree.ErrNotRepository, …).
func (e *InputError) Unwrap() error { return e.Err }

// Is reports the error as ErrBadInput unless it is git failing to say
// whether the directory can hold a worktree.
func (e *InputError) Is(target error) bool {
	if target != ErrBadInput {
		return false
	}
	return e.Arg != ArgWorktree || errors.Is(e.Err, worktree.ErrNotRepository) || errors.Is(e.Err, worktree.ErrNoCommits)
}

// childRequest is what a new child's task call asks for once its agent
// and model passed their checks: its profile (nil: none), binding, the
// note to show about the binding, and whether it works in a worktree.
type childRequest struct {
	profile  *agents.Profile
	binding  model.Binding
	note     string
	worktree bool
	// why is what asked for the worktree when a profile did.
	why string
}

// requestChild holds a new child's agent and worktree request to the
// rules: the agent exists in set, its model resolves and can run
// (checkedProfileBinding); the call's worktree argument wins over the
// profile's worktree: line. Errors are *InputError.
func requestChild(set *agents.Set, args TaskArgs, parent model.Binding, getenv func(string) string) (childRequest, error) {
	req := childRequest{binding: parent}
	if args.Agent != nil {
		p, err := set.Lookup(*args.Agent)
		if err != nil {
			return req, &InputError{Arg: ArgAgent, Err: err}
		}
		req.profile = &p
		if req.binding, req.note, err = checkedProfileBinding(set, p, parent, getenv); err != nil {
			return req, &InputError{Arg: ArgAgent, Err: err}
		}
		if p.Worktree != nil && *p.Worktree {
			req.worktree, req.why = true, fmt.Sprintf("agent %q asks for a worktree (worktree: true in %s)", p.Name, p.Source)
		}
	}
	if args.Worktree != nil {
		req.worktree, req.why = *args.Worktree, ""
	}
	return req, nil
}

// CheckTask checks a new child's task call against the agent profiles in
// set and the directory cwd, as the supervisor checks it, before anything
// is written: the agent exists, its model can run on parent (the binding
// the child would inherit), and a worktree it asks for has a git
// repository with a commit to start from. A refusal is an *InputError;
// getenv reads the environment the child's provider would use.
func CheckTask(ctx context.Context, set *agents.Set, cwd string, parent model.Binding, args TaskArgs, getenv func(string) string) error {
	req, err := requestChild(set, args, parent, getenv)
	if err != nil || !req.worktree {
		return err
	}
	if _, err := worktree.Detect(ctx, cwd); err != nil {
		return &InputError{Arg: ArgWorktree, Why: req.why, Err: err}
	}
	return nil
}

// resolveProfileBinding resolves a profile's model against its parent's binding
// (agents.Set.ResolveModel: Claude aliases, models.yaml) and gives it its
// effective endpoint, with at most one note for the user (an alias that
// fell back to the parent's model). A relative script:PATH is read from
// the directory of the profile file, and must exist.
func resolveProfileBinding(set *agents.Set, prof agents.Profile, parent model.Binding, getenv func(string) string) (model.Binding, string, error) {
	b, note, err := set.ResolveModel(prof, parent)
	if err != nil {
		return model.Binding{}, "", err
	}
	if b.Provider == "script" && b != parent {
		dir := filepath.Dir(prof.Source) // the profile file's own directory, a subdirectory too
		if !filepath.IsAbs(b.Model) {
			b.Model = filepath.Join(dir, b.Model)
		}
		if fi, err := os.Stat(b.Model); err != nil || fi.IsDir() {
			return model.Binding{}, "", fmt.Errorf("agent %q: model %s: no such script file (a relative path is read from %s); fix the model: line of %s", prof.Name, prof.Model, dir, prof.Source)
		}
	}
	return providers.Resolve(b, getenv), note, nil
}

// checkedProfileBinding is resolveProfileBinding for a child about to launch:
// a model of its own must also run — a script that loads, a provider
// whose key is set.
func checkedProfileBinding(set *agents.Set, prof agents.Profile, parent model.Binding, getenv func(string) string) (model.Binding, string, error) {
	b, note, err := resolveProfileBinding(set, prof, parent, getenv)
	if err != nil || b == parent {
		return b, note, err
	}
	if b.Provider == "script" {
		if _, err := script.Load(b.Model); err != nil {
			return model.Binding{}, "", fmt.Errorf("agent %q: model %s: %w", prof.Name, prof.Model, err)
		}
		return b, note, nil
	}
	if _, err := providers.Check(b, getenv); err != nil {
		return model.Binding{}, "", fmt.Errorf("agent %q: %w; or change the model: line of %s", prof.Name, err, prof.Source)
	}
	return b, note, nil
}
