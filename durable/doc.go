// Package durable owns how ink writes a file so that it survives a crash of
// the machine, not only of a process: the small filesystem interface (FS)
// that every writer of state another process or a later run acts on goes
// through — transcripts, lease records, worktree records — and the rules
// built on it: a directory ink creates is synced into its parent
// (MkdirAll), a file is published complete or not at all (WriteFile:
// temp file, fsync, rename, directory fsync).
//
// OS is the real filesystem. Package durable/crashfs is a strict test
// implementation that keeps only what was synced when it is told to crash,
// so that tests can check what a power loss leaves behind at every durable
// point. Reads need no interface: a crash can only take writes away.
package durable
