// Package lease owns ink's single-writer guarantee for transcripts across
// processes, and the per-file edit locks used by tools.
//
// A transcript lease is an exclusive flock on "<transcript>.lease" (created
// 0600, never deleted) plus a sidecar "<transcript>.lease.json" that names the
// holder (pid, host, boot id, attempt, agent, session), carries a fencing
// epoch that grows by one with every acquisition, and a heartbeat the holder
// refreshes while it runs. The kernel drops the flock when the holder dies, so
// a free lock proves the holder is gone; a held lock whose heartbeat stopped
// is hung, and Break stops its process group.
//
// Sessions must live on a local disk: flock over NFS is unsupported.
package lease
