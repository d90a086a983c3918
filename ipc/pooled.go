package ipc

// PooledEnv is set, to the host's process id, in the environment of a
// worker that its host starts ahead of its attempt, to wait idle in a warm
// pool. Such a worker learns its session, and so where to log, only from
// the Run message, and waits for it as long as its host lives rather than
// giving up after a while: it exits once its parent is no longer that
// process.
const PooledEnv = "INK_WORKER_POOLED"
