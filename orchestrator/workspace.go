package orchestrator

import (
	"context"
	"os"

	"github.com/inkdev/ink/worktree"
)

// Workspaces prepares and settles the workspaces of worktree children:
// it finds the repository a task runs in, makes a child's worktree and
// locks it while an attempt runs, validates it before a resume, and after
// the attempt brings the child's commits back, assesses what it left and
// removes it when nothing is worth keeping. It is the second seam beside
// Launcher: a supervisor whose children work elsewhere keeps their
// worktrees through it. The default (gitWorkspaces) is package worktree on
// this machine's git; tests use an in-memory one. Implementations are safe
// for concurrent use.
type Workspaces interface {
	// Detect finds the repository dir lies in (worktree.Detect).
	Detect(ctx context.Context, dir string) (worktree.Repo, error)
	// Create makes child childID's worktree of repo under inkHome, locked
	// for this process, recording origin (worktree.CreateFor).
	Create(ctx context.Context, repo worktree.Repo, inkHome, childID string, origin worktree.Origin) (worktree.Record, error)
	// Find finds child childID's worktree under inkHome (worktree.Find).
	Find(ctx context.Context, inkHome, childID string) (worktree.Info, error)
	// List lists the worktrees under inkHome (worktree.ListWith).
	List(ctx context.Context, inkHome string) ([]worktree.Info, error)
	// Lock locks the worktree with reason (worktree.Lock); Unlock frees it.
	Lock(ctx context.Context, rec worktree.Record, reason string) error
	Unlock(ctx context.Context, rec worktree.Record) error
	// Validate says why the worktree cannot be resumed in, if it cannot
	// (worktree.Validate).
	Validate(ctx context.Context, rec worktree.Record) []worktree.Problem
	// Sync brings the child's commits into its repository (worktree.Sync).
	Sync(ctx context.Context, rec worktree.Record) error
	// Assess brings the commits back and says what the worktree holds
	// (worktree.SyncAndAssess).
	Assess(ctx context.Context, rec worktree.Record) worktree.Assessment
	// Settle brings the commits back, assesses the worktree and removes it
	// when it holds nothing (worktree.Settle).
	Settle(ctx context.Context, rec worktree.Record) worktree.Outcome
}

// gitWorkspaces is the Workspaces of package worktree.
type gitWorkspaces struct{}

var _ Workspaces = gitWorkspaces{}

func (gitWorkspaces) Detect(ctx context.Context, dir string) (worktree.Repo, error) {
	return worktree.Detect(ctx, dir)
}

func (gitWorkspaces) Create(ctx context.Context, repo worktree.Repo, inkHome, childID string, origin worktree.Origin) (worktree.Record, error) {
	return worktree.CreateFor(ctx, repo, inkHome, childID, os.Getpid(), origin)
}

func (gitWorkspaces) Find(ctx context.Context, inkHome, childID string) (worktree.Info, error) {
	return worktree.Find(ctx, inkHome, childID)
}

func (gitWorkspaces) List(ctx context.Context, inkHome string) ([]worktree.Info, error) {
	return worktree.ListWith(ctx, inkHome, worktree.ListOptions{})
}

func (gitWorkspaces) Lock(ctx context.Context, rec worktree.Record, reason string) error {
	return worktree.Lock(ctx, rec, reason)
}

func (gitWorkspaces) Unlock(ctx context.Context, rec worktree.Record) error {
	return worktree.Unlock(ctx, rec)
}

func (gitWorkspaces) Validate(ctx context.Context, rec worktree.Record) []worktree.Problem {
	return worktree.Validate(ctx, rec)
}

func (gitWorkspaces) Sync(ctx context.Context, rec worktree.Record) error {
	return worktree.Sync(ctx, rec)
}

func (gitWorkspaces) Assess(ctx context.Context, rec worktree.Record) worktree.Assessment {
	return worktree.SyncAndAssess(ctx, rec)
}

func (gitWorkspaces) Settle(ctx context.Context, rec worktree.Record) worktree.Outcome {
	return worktree.Settle(ctx, rec)
}
