// Package tools owns ink's built-in tools (read, grep, find, ls, edit, write,
// bash) and the worker side of `task`, which forwards each call to the
// orchestrator through the TaskRunner interface.
//
// Each tool's arguments are one Go type (readArgs, bashArgs, …): the
// schema in its Spec is generated from the type and Run decodes a call
// into it, both with package toolargs, so a bad call gets the same kind of
// message from every tool; Run then checks what the type cannot say (a
// blank path, a range).
//
// # Confinement
//
// An agent's tools work inside one directory tree, its root (Env.Root: the
// checkout, or the worktree of a worktree child). Builtins opens the root
// once, as an os.Root, and read, write, edit, ls, find and grep do every
// open, create, mkdir, rename, link, stat and directory walk through it.
// The kernel therefore resolves each path beneath the root's open
// directory: a symbolic link or directory that another process swaps in
// mid-call can make a call fail, but never makes it read or write a byte
// outside the root. The caller closes the root with the io.Closer that
// Builtins returns.
//
// Before that, each path argument is resolved for clear messages: relative
// paths start at the working directory (Env.Cwd), absolute paths inside
// the root work, and symbolic links are followed while they stay inside
// (relative, absolute or through ".."). A path that leads outside, by
// "..", an absolute path or a link, is refused with a message naming the
// path, where it leads and the root; a link swapped in later gets the same
// refusal from the os.Root. Paths are shown relative to the working
// directory. find and grep list links but never descend through them.
//
// Glob patterns (find's pattern, grep's glob) are matched by
// github.com/bmatcuk/doublestar/v4, whose cost is polynomial; patterns are
// capped in length and in the alternatives their { } groups expand to, so
// one match stays cheap, and walks check their context before every entry.
//
// # Changing files: the lock and the compare-and-swap
//
// edit and write change a file only if the agent has read it, and only if
// it still holds what the agent read. Each call:
//
//  1. takes the file's edit lock (below), waiting as long as ctx allows;
//  2. reads the file and compares its content hash with the one this
//     agent last saw (through read, or its own edit or write); a file it
//     has not read, or one that changed since, is refused with "read it
//     first" or "changed since you last read it; re-read it first";
//  3. computes the new content and writes it to a temporary file in the
//     same directory (through a root opened on that directory), keeping
//     the file's mode, and syncs it;
//  4. re-reads the file and checks its hash again immediately before the
//     replace, refusing the same way if anything changed it meanwhile;
//  5. renames the temporary file over it (a new file is hard-linked into
//     place, which fails rather than replace a file that appeared) and
//     syncs the directory.
//
// Readers see the old content or the new, never a mix. The temporary file
// (".<name>.ink-<random>") is removed on every path but a crash. ink
// processes exclude one another through the lock, so between them no
// update is lost; a program that takes no lock (an editor, a script) is
// caught by the re-check unless it writes in the instant between the
// re-check and the rename.
//
// # Where the edit locks live
//
// The edit lock of a file is an flock on <dir>/<sha256(real path)>.lock,
// keyed by the file's symlink-free absolute path, so every ink process
// that edits the file, from any checkout path or worktree root, takes the
// same lock. <dir> is host-wide and per user, the same for every ink
// process of the user whatever INK_HOME it uses (two homes on one
// checkout must exclude each other): DefaultLockDir picks
// $XDG_RUNTIME_DIR/ink/locks when that is a private directory of the
// user's, else /run/user/<uid>/ink/locks when that is, else
// <temp>/ink-<uid>/locks, which ink creates with mode 0700 and refuses,
// with a message saying how to fix it, when it is a link, is not the
// user's, or is open to others. Lock files are empty and never deleted.
// Env.LockDir overrides the place, for tests only.
package tools
