package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/inkdev/ink/durable"
)

// Meta is the holder metadata stored in "<transcript>.lease.json". It
// describes the most recent holder; while the lock is free it describes the
// last one.
type Meta struct {
	Pid                 int       `json:"pid"`
	Host                string    `json:"host"`
	BootID              string    `json:"bootId,omitempty"`
	AttemptID           string    `json:"attemptId"`
	Agent               string    `json:"agent,omitempty"`
	SessionID           string    `json:"sessionId,omitempty"`
	Epoch               int64     `json:"epoch"`
	StartedAt           time.Time `json:"startedAt"`
	HeartbeatAt         time.Time `json:"heartbeatAt"`
	HeartbeatIntervalMs int64     `json:"heartbeatIntervalMs,omitempty"`
	ProgressSeq         int64     `json:"progressSeq"`
	// Budget is the token budget of the holder's tree of agents, as the
	// holder last knew it; nil without one (SetBudget).
	Budget *Budget `json:"budget,omitempty"`
}

// Budget is a tree's token budget as one holder sees it: the limit and
// what is left of it (negative once overspent).
type Budget struct {
	Limit     int64 `json:"limit"`
	Remaining int64 `json:"remaining"`
}

// HeartbeatInterval returns the interval the holder promised to beat at, or
// DefaultHeartbeat when it did not say.
func (m *Meta) HeartbeatInterval() time.Duration {
	if m == nil || m.HeartbeatIntervalMs <= 0 {
		return DefaultHeartbeat
	}
	return time.Duration(m.HeartbeatIntervalMs) * time.Millisecond
}

// MetaPath returns the metadata path of the transcript at path: the
// holder's record, written once per acquisition and synced, since it holds
// the fencing epoch.
func MetaPath(path string) string { return path + ".lease.json" }

// BeatPath returns the heartbeat path of the transcript at path: the
// holder's heartbeat, progress and budget, rewritten every beat and never
// synced. It is kept apart from the record so that a beat, which a crash
// may leave empty, can never take the epoch with it.
//
// ink reaches the beat file from the record's path (beatPathOf); BeatPath
// is kept for tests outside lease that tamper with a holder's beat.
func BeatPath(path string) string { return path + ".lease.beat" }

// beatPathOf returns the heartbeat path beside a metadata path.
func beatPathOf(metaPath string) string {
	return strings.TrimSuffix(metaPath, ".json") + ".beat"
}

// FilePath returns the lock file path of the transcript at path.
func FilePath(path string) string { return path + ".lease" }

// maxMetaSize bounds what readMeta accepts; real metadata is a few hundred
// bytes.
const maxMetaSize = 64 << 10

// readMeta reads the holder's record and completes it with its heartbeat
// (BeatPath) when the beat is that holder's: same epoch, attempt and pid.
// It returns (nil, nil) when there is no record and a descriptive error
// when the record is not a regular file or does not parse. A beat that
// cannot be read is ignored: it is never synced, and the record alone is
// enough to judge the lease (as if its holder had not beaten yet).
func readMeta(path string) (*Meta, error) {
	m, err := readRecord(path)
	if err != nil || m == nil {
		return m, err
	}
	if b, err := readRecord(beatPathOf(path)); err == nil && b != nil &&
		b.Epoch == m.Epoch && b.AttemptID == m.AttemptID && b.Pid == m.Pid {
		m.HeartbeatAt, m.ProgressSeq, m.Budget = b.HeartbeatAt, b.ProgressSeq, b.Budget
		if b.HeartbeatIntervalMs > 0 {
			m.HeartbeatIntervalMs = b.HeartbeatIntervalMs
		}
	}
	return m, nil
}

// readRecord reads one metadata file (a record or a beat).
func readRecord(path string) (*Meta, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lease metadata %s is a symlink; ink writes it as a regular file: remove the symlink", path)
		}
		return nil, fmt.Errorf("read lease metadata: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read lease metadata: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("lease metadata %s is a %s, not a regular file: remove it", path, describeMode(fi.Mode()))
	}
	if fi.Size() > maxMetaSize {
		return nil, fmt.Errorf("lease metadata %s is %d bytes, far larger than ink writes: inspect it and remove it", path, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMetaSize))
	if err != nil {
		return nil, fmt.Errorf("read lease metadata %s: %w", path, err)
	}
	if len(data) == 0 {
		// ink never writes an empty record, but a machine that stopped
		// between publishing a record (Options.SyncLater) and syncing it
		// can leave one. ink syncs nothing it writes under an epoch before
		// that epoch's record, so the count starts again as if the record
		// had never been written.
		return nil, nil
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("lease metadata %s is corrupt (%v); it holds the fencing epoch, so ink will not guess one: inspect it, and delete it to start counting again at epoch 1", path, err)
	}
	return &m, nil
}

// preparedMeta is metadata written and synced to a temp file, not yet
// published. Exactly one of commit or discard must be called.
type preparedMeta struct {
	fsys      durable.FS
	path, tmp string
	durable   bool
	open      durable.File // the record kept open for a later sync (Options.SyncLater)
}

// prepareMeta writes m to a temp file beside path, synced when sync is
// set. Acquisition records are synced (they carry the epoch); heartbeats,
// written to their own file, are not: a beat only says "alive now", which
// a crash makes moot, and syncing every worker's beat every second would
// cost the disk for nothing. Either way the rename publishes the whole
// record atomically to other processes. When open is set the temp file is
// kept open, unsynced, in p.open.
func prepareMeta(fsys durable.FS, path string, m *Meta, sync, keepOpen bool) (*preparedMeta, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode lease metadata: %w", err)
	}
	data = append(data, '\n')
	name := durable.TempName(path)
	tmp, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write lease metadata: %w", err)
	}
	p := &preparedMeta{fsys: fsys, path: path, tmp: name, durable: sync}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		p.discard()
		return nil, fmt.Errorf("write lease metadata: %w", err)
	}
	if keepOpen {
		p.open = tmp
		return p, nil
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			p.discard()
			return nil, fmt.Errorf("sync lease metadata: %w", err)
		}
	}
	if err := tmp.Close(); err != nil {
		p.discard()
		return nil, fmt.Errorf("write lease metadata: %w", err)
	}
	return p, nil
}

// commit renames the temp file over the metadata path and syncs the
// directory.
func (p *preparedMeta) commit() error {
	if err := p.fsys.Rename(p.tmp, p.path); err != nil {
		if p.open != nil {
			p.open.Close()
		}
		p.discard()
		return fmt.Errorf("publish lease metadata: %w", err)
	}
	if !p.durable {
		return nil
	}
	if err := p.fsys.SyncDir(filepath.Dir(p.path)); err != nil {
		return fmt.Errorf("sync lease directory: %w", err)
	}
	return nil
}

// discard removes the temp file.
func (p *preparedMeta) discard() { _ = p.fsys.Remove(p.tmp) }

// bootID returns this machine's boot id, or "" where the kernel does not
// publish one.
func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// hostName returns the host name, or "unknown" when it cannot be read.
func hostName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}
