// Package sandbox confines the bash tool, and everything a command starts,
// with Linux Landlock, seccomp and a private mount namespace. It owns the
// mode names, the ceiling a run puts on every agent's sandbox (Ceiling),
// the decisions whether this machine can enforce a mode, the network cut
// and the read-only git directory, the policy of what a command may write,
// and the hidden `ink sandbox-exec` step that applies a policy and then
// becomes the command. Of ink it imports only durable, for the files it
// creates in a git directory to cover them read-only.
//
// # Modes
//
// The names are Codex's:
//
//   - read-only: commands may read (and execute) every file the user may,
//     and write only a private temporary directory made fresh for each
//     command and removed after it ($TMPDIR points there).
//   - workspace-write (the default): also the agent's root — its worktree,
//     for a worktree child, never the user's checkout then — and the
//     user's cache directory (os.UserCacheDir, e.g. ~/.cache, created if
//     missing), because compilers and package managers write there, plus
//     any extra directory the user lists (--writable DIR, or the profile's
//     writable: list). A worktree child may also write the objects, refs
//     and logs of its worktree's own git directory and the worktree's
//     private directory in it (WorktreeGitDirs, named from ink's record,
//     never read from the worktree), so git add, commit and stash work
//     there; nothing of the user's repository is granted.
//   - danger-full-access: no sandbox; commands may write anywhere the user
//     may.
//
// An agent with neither the edit nor the write tool defaults to read-only
// (DefaultMode).
//
// # The ceiling
//
// The user's --sandbox (workspace-write when absent), --network and
// --writable are a Ceiling: Ceiling.Admit settles each agent's Grant from
// what its profile asks (Ask) and refuses a mode wider than the ceiling,
// network: true beyond it, a writable: directory outside the project (not
// given with --writable) or overlapping its git directory, and any sandbox
// field of a profile loaded while the run was going (Ask.Reloaded).
//
// # The network
//
// In both confined modes commands have no network unless the policy
// grants it (Policy.Network): a seccomp filter lets them create no socket
// but a Unix one and denies io_uring, for 64-bit and 32-bit (compat)
// calls alike, and Landlock (ABI 4 and newer; UDP from ABI 10) denies TCP
// connect and bind. The filter always denies open_by_handle_at, which
// would open files around the path rules. CheckNetwork and DecideNetwork
// say whether this kernel can cut the network, as Check and Decide do for
// the mode.
//
// # The checkout's git directory
//
// Landlock cannot make a read-only hole in a writable tree, so the git
// state of the user's checkout (Checkout, FindCheckout; not a worktree
// child's, which ink names) is kept from bash by mounting it read-only
// (Checkout.Protect: the whole git directory, or with git writes allowed
// only its config, hooks, commondir, config.worktree and modules/) in a
// private mount namespace, before Landlock. The parent starts the step in that namespace with clone flags
// (Namespaces: CLONE_NEWUSER and CLONE_NEWNS with an identity map, or
// CLONE_NEWNS alone as root; ProbeNamespaces finds which this machine
// gives); the step refuses to mount in its parent's namespace. A
// sandboxed command cannot undo the mounts: Landlock forbids mount and
// umount to it. In both confined modes these stay usable as well: the
// devices /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom,
// /dev/tty, /dev/ptmx and /dev/pts/* (with their ioctls), POSIX shared
// memory in /dev/shm, and the pipes the command was given. A write
// anywhere else fails with EACCES ("Permission denied"), and so does
// truncating, removing, renaming or linking a file there (a move or link
// across the boundary may fail with EXDEV, "Invalid cross-device link",
// instead).
//
// # How it is applied
//
// Go cannot run code between fork and exec, so the tool starts the ink
// binary itself as `ink sandbox-exec -path /usr/bin/bash -write DIR... --
// bash -c CMD` (Wrap writes that line; the policy travels on it, never
// through a file). That process locks itself to one thread, marks every
// inherited descriptor above 2 close-on-exec (CloseInherited), mounts the
// read-only paths, sets no_new_privs, restricts the thread with a
// Landlock ruleset, installs the seccomp filter and executes
// bash in its own place (Main): the same pid and process group, so
// timeouts and cancellation kill the command's whole group as before. A
// Landlock domain can never be lifted, and every process bash starts
// inherits it. When the policy cannot be applied, the command does not run
// at all: the failure comes back over a close-on-exec status pipe and is
// reported as such (Launch.Failure).
//
// # Kernels
//
// The sandbox needs Landlock ABI 3 (Linux 6.2 or newer; MinABI says why)
// and uses what newer kernels add: ioctl control on devices (ABI 5) and
// no signals to processes outside the sandbox (ABI 6). Check asks the
// kernel. Where it is missing, Decide drops a defaulted mode with one
// warning and runs bash unconfined, and refuses an explicitly requested
// one with a message that says why and how to proceed
// (--sandbox danger-full-access).
//
// # What is not protected
//
//   - The network under Policy.Network (and danger-full-access), and Unix
//     sockets always: commands may connect to Docker's socket (root on the
//     host), ssh-agent's, D-Bus, or a local DNS cache, and receive any
//     descriptor a local server passes over one.
//   - Reading. Every file the user may read stays readable: SSH and cloud
//     credentials, .env files, other projects, ink's own transcripts. What
//     a command prints goes to the model.
//   - Metadata. Landlock does not control chmod, chown, utime, setxattr,
//     flock or access on files outside the writable directories, so a
//     command may still change their modes and owners (as root, any file).
//   - What is writable is writable in full: in the root a command may
//     create a new repository (a .git directory), whose config the user's
//     git obeys when run there; with git writes allowed, the checkout's
//     history (refs, objects, reflogs, the index), and so a repository
//     staged as a submodule (whose config the user's git obeys when git
//     status looks into it) or a rebase whose todo list runs a command
//     when the user continues it; without a mount
//     namespace (ProbeNamespaces failed, and the caller let the mode run)
//     its whole git directory. In the cache directory, build caches other
//     projects use; /dev/shm is shared with every process. A worktree
//     child may rewrite its worktree's .git link and everything in its own
//     objects, refs and logs; ink's own git never follows that link
//     (package worktree).
//   - Other processes. Commands cannot ptrace processes outside their
//     sandbox or open their memory, and from ABI 6 on they cannot signal
//     them (below ABI 6 a command may signal any process the user may —
//     as root, any process). What /proc shows with read access stays
//     readable, though: the environment, command line and memory map of
//     the user's other processes (as root, of every process), so secrets
//     must not sit in a process environment. CPU, memory and disk space
//     are not limited.
//   - Kernels without Landlock ABI 3, and danger-full-access: nothing at
//     all is confined.
//   - Only bash runs sandboxed. The file tools keep to the agent's root
//     (and out of the checkout's protected git state) by their own checks;
//     the worker and supervisor are not sandboxed.
//
// # What breaks, and what to do
//
// setuid programs (sudo) do not gain privileges under no_new_privs. Tools
// that write outside $TMPDIR to /tmp by a fixed path, or keep caches
// outside the cache directory (~/go/pkg/mod, ~/.npm, ~/.cargo, ~/.m2),
// get "Permission denied": list those directories as writable. Without the
// network, package managers, git fetch and curl fail with "Operation not
// permitted": grant it (--network) or fetch before the run. In the user's
// checkout git add and commit fail with "Read-only file system" unless git
// writes are allowed. Inside the user namespace, files of users other than
// the user show as owned by nobody. In a worktree child, git commands that
// write its git directory's config or hooks (git config, gc, worktree add)
// fail with "Permission denied".
package sandbox
