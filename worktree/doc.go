// Package worktree owns the lifecycle of the git worktrees that ink gives to
// children whose edits are risky: it detects the repository a child starts
// in, creates a worktree on a fresh ink/<childId> branch under
// $INK_HOME/worktrees, locks it while a worker runs there, assesses it after
// every attempt (clean, work-present or unknown), removes it only when it is
// provably clean, validates it before a resume, and serves the `ink
// worktrees` commands (list, diff, merge, rm, prune).
//
// The package never loses work: any doubt (a git failure, a missing file, a
// replaced history) is reported as Unknown and nothing is deleted, and it
// never deletes a branch it did not create. Every git call goes through one
// wrapper (git.go) that pins the locale, never prompts, and retries, a
// bounded number of times with jitter, the failures git reports when it
// loses a race with another git process (a held index.lock or config.lock,
// a worktree's metadata read while it was being written).
//
// # A git directory of its own, and git that runs nothing
//
// Each worktree has a git directory of its own beside it, <path>.git,
// written by ink (layout.go, gitdir.go): the child's sandbox may write its
// objects, refs, logs and the worktree's private directory
// (Record.PrivateGitDir), never the user's repository, whose history it
// reads through alternates. Sync (sync.go) brings the child's commits into
// the user's repository under the repository lock, after every attempt and
// before Merge and RemoveForce decide. ink's git never runs a program that
// configuration names (harden.go): every call pins hooks, fsmonitor,
// pagers, editors, ssh, credential helpers, transports, signing, external
// diffs and automatic gc off and drops GIT_* overrides from the
// environment; calls on the user's repository that may read file contents
// pin the filter, merge and diff drivers its own configuration defines;
// and in a worktree git runs with GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE
// set to what ink verified (openLayout), never through the .git link the
// child can rewrite. A worktree that fails the check is Untrusted: listed
// as unknown with why, and never run git in.
//
// # One lock per repository, kept in the repository
//
// Every change ink makes to a repository's worktree metadata — `git
// worktree add`, `remove`, `prune`, `lock` and `unlock`, deleting an
// ink/<childId> branch, the commit and merge of `ink worktrees merge` — runs
// under an exclusive flock on <git-common-dir>/ink-worktrees.lock. The lock
// lives in the repository, not under INK_HOME, because git's own worktree
// commands are not safe against each other: one process adding a worktree
// while another removes one fails with errors such as "failed to read
// .git/worktrees/<id>/commondir". Two ink processes with different
// INK_HOMEs (an MCP client and a terminal, CI and a person, two users) work
// on the same repository, so only a lock found through the repository
// excludes them all. The file is never deleted (deleting a flock target lets
// two processes lock two different files of one name) and is readable by
// all, so any user who may change the repository can take it. Its
// descriptor is inherited by the git commands run under it, so a killed ink
// does not release the lock while its git command is still writing.
//
// # Files and crash safety
//
// Besides the worktree directory and its git directory (<childId>.git) the
// package keeps one record file per worktree,
// $INK_HOME/worktrees/<repo-slug>/<childId>.json (repository, baseline,
// branch, creation reflog), so the admin commands know the baseline; it is
// removed together with the worktree. The git directory is built under
// <childId>.git.new and renamed into place, and the worktree's link moves
// to it last, so it is whole or absent. Create writes the
// record before it asks git for anything, and keeps the worktree locked as
// "ink <childId> pid <pid> creating" until every step is done, so whatever
// instant the creating process dies, what is left is nothing or something
// List attributes to its child and Prune removes: a record alone, a record
// and its untouched branch, or a worktree whose lock names a dead pid. A
// record is only ever replaced through one fixed temporary name,
// .<childId>.json.tmp, which Create and Prune delete when they find one.
// A worktree another INK_HOME made is recognised by its branch
// (ink/<childId>) and its path (<home>/worktrees/<repo-slug>/<childId>); its
// baseline is read from the branch's creation entry in the reflog when its
// record cannot be read.
//
// # Out and back: the workspace of a remote child
//
// A worker that shares no disk with its supervisor gets the worktree as a
// git bundle and sends its work back as bundles (bundle.go). On the
// supervisor, Pack (ship.go) writes the worktree as it is — the baseline
// and its tree, the child's commits, a snapshot commit of the files — and
// ApplySnapshot (apply.go) applies a worker's snapshot to the worktree
// under the repository lock, into the worktree's own git directory, where
// Sync finds the child's commits; it receives the objects into a
// quarantine and refuses (*RefusedError, treecheck.go) anything a worker
// of ink never sends. On the worker, Materialise (materialise.go) makes a
// shallow repository of its own at the same absolute path, refusing a
// path that exists (*ExistsError), and Snapshot (snapshot.go) makes the
// snapshot commit — committed, uncommitted and untracked work, deletions,
// modes, symlinks; not ignored files or empty directories — with, when
// something was staged, an index commit as its second parent, which
// ApplySnapshot and Materialise make the other side's index — and its
// bundle. .worktreeinclude files are shipped only when asked
// (PackOptions.ShipIncludes). Every call is ink's hardened git; on the
// worker, whose repository the model may rewrite, the repository's own
// drivers are pinned as on the user's repository.
package worktree
