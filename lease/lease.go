package lease

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/inkdev/ink/durable"
)

// acquireTries is how many times Acquire tries the lock before it reports
// ErrBusy; between tries it waits 5–25 ms.
const acquireTries = 3

// swapRetries bounds how often Acquire starts over because the lease file it
// locked was replaced at the path between stat and lock.
const swapRetries = 3

// Owner names the attempt that holds a lease; it is copied into the
// metadata so that others can tell who holds the transcript.
type Owner struct {
	// AttemptID identifies this attempt; required, and part of fencing.
	AttemptID string
	// Agent is the profile name ("" for the main agent).
	Agent string
	// SessionID is the transcript's session id.
	SessionID string
}

// Lease is a held single-writer lease on one transcript. It is released by
// Release; all methods are safe for concurrent use.
type Lease struct {
	path      string
	leasePath string
	metaPath  string
	owner     Owner
	key       fileKey
	fl        *flock.Flock
	tries     int // lock tries Acquire needed; read by tests

	mu   sync.Mutex // guards meta and beatErr
	meta Meta
	// beatErr is the last heartbeat write failure, nil after a good beat.
	beatErr error

	progress atomic.Int64
	fence    atomic.Pointer[error]
	fenced   chan struct{}
	released atomic.Bool

	// unsynced is the acquisition record's file, published but not yet
	// synced (Options.SyncLater); SyncRecord syncs and closes it.
	syncMu   sync.Mutex
	unsynced durable.File

	fsys durable.FS
	// prev is the record this acquisition replaced: the previous holder's.
	prev *Meta

	hbOnce sync.Once
	hbStop chan struct{}
	hbDone chan struct{}

	releaseOnce sync.Once
	releaseErr  error
}

// Acquire takes the single-writer lease on the transcript at path for owner.
// It locks "<path>.lease" (created 0600 with its directory if missing; never
// deleted) with up to three non-blocking tries 5–25 ms apart, then publishes
// "<path>.lease.json" with the next fencing epoch. When another process or
// another Acquire in this process holds the lease, the error matches ErrBusy
// and is a *BusyError naming the holder. A lease file that is a symlink,
// directory or special file yields an error matching ErrBadLeaseFile. The
// caller must Release the lease.
//
// ink acquires through AcquireWith (with its heartbeat interval); this
// zero-options form is kept for the tests and benchmarks of lease, bench
// and launcher/command.
func Acquire(path string, owner Owner) (*Lease, error) {
	return AcquireWith(path, owner, Options{})
}

// Options tune AcquireWith.
type Options struct {
	// Heartbeat is the interval the holder will beat at. It goes into the
	// acquisition record, so that Probe can judge the lease from the
	// start and StartHeartbeat with the same interval need not write a
	// first beat at once: the first beat comes one interval later.
	Heartbeat time.Duration
	// SyncLater publishes the acquisition record without waiting for the
	// disk at all: other processes see it at once, and its content is
	// synced by SyncRecord, which the holder must call — and then sync the
	// directory that holds the record, the transcript's own, which
	// session.CreateSyncing does when it creates the transcript there —
	// before anything it writes under the new epoch has to survive a
	// crash of the machine. A crash of a process loses nothing either
	// way. It spares the holder's start the wait for the disk when what it
	// does next needs nothing on it.
	SyncLater bool
	// FS is the filesystem the lease's files are written through; nil is
	// the real one (durable.OS). Tests pass a crashing one.
	FS durable.FS
}

// AcquireWith is Acquire with options.
func AcquireWith(path string, owner Owner, opts Options) (*Lease, error) {
	if path == "" {
		return nil, errors.New("lease acquire: empty transcript path")
	}
	if owner.AttemptID == "" {
		return nil, fmt.Errorf("lease acquire %s: owner has no attempt id", path)
	}
	fsys := durable.Or(opts.FS)
	if err := durable.MkdirAll(fsys, filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lease acquire: %w", err)
	}
	l := &Lease{
		fsys:      fsys,
		path:      path,
		leasePath: FilePath(path),
		metaPath:  MetaPath(path),
		owner:     owner,
		fenced:    make(chan struct{}),
		hbStop:    make(chan struct{}),
		hbDone:    make(chan struct{}),
	}
	for try := 1; ; try++ {
		ok, err := l.tryLock()
		var be *BusyError
		if errors.As(err, &be) {
			return nil, be
		}
		if err != nil {
			return nil, fmt.Errorf("lease acquire: %w", err)
		}
		if ok {
			l.tries = try
			break
		}
		if try == acquireTries {
			return nil, busyError(path, l.metaPath)
		}
		time.Sleep(5*time.Millisecond + rand.N(20*time.Millisecond))
	}
	if err := l.publish(opts); err != nil {
		l.unlock()
		return nil, fmt.Errorf("lease acquire: %w", err)
	}
	return l, nil
}

// tryLock makes one attempt at the lock. It returns an in-process *BusyError
// when this process already holds the lease.
func (l *Lease) tryLock() (bool, error) {
	for swap := 0; ; swap++ {
		key, err := statLeaseFile(l.fsys, l.leasePath)
		if err != nil {
			return false, err
		}
		if cur, ok := held.reserve(key, l); !ok {
			m := cur.Meta()
			be := &BusyError{Path: l.path, InProcess: true}
			if m.AttemptID != "" {
				be.Holder = &m
				be.HeartbeatAge = time.Since(m.HeartbeatAt)
			}
			return false, be
		}
		fl := flock.New(l.leasePath,
			flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK),
			flock.SetPermissions(0o600))
		ok, err := fl.TryLock()
		if err != nil {
			held.drop(key, l)
			return false, openError(l.leasePath, err)
		}
		if !ok {
			held.drop(key, l)
			return false, nil
		}
		same, err := lockedIsAtPath(fl, l.leasePath, key)
		if err != nil || !same {
			_ = fl.Unlock()
			held.drop(key, l)
			if err != nil {
				return false, err
			}
			if swap+1 >= swapRetries {
				return false, fmt.Errorf("lease file %s keeps being replaced while ink locks it; stop whatever program is removing or renaming it, then retry", l.leasePath)
			}
			continue
		}
		l.key = key
		l.fl = fl
		return true, nil
	}
}

// lockedIsAtPath checks, after locking, that the locked inode is a regular
// file that is still linked and still the one at path: a lock on a file that
// was unlinked or replaced protects nothing.
func lockedIsAtPath(fl *flock.Flock, path string, key fileKey) (bool, error) {
	fi, err := fl.Stat()
	if err != nil {
		return false, fmt.Errorf("check locked lease file %s: %w", path, err)
	}
	if err := checkLeaseMode(path, fi.Mode()); err != nil {
		return false, err
	}
	k, nlink := keyOf(fi)
	if k != key || nlink == 0 {
		return false, nil
	}
	at, err := os.Lstat(path)
	if err != nil {
		return false, nil
	}
	atKey, _ := keyOf(at)
	return atKey == key, nil
}

// publish writes the metadata of a freshly locked lease with the next epoch.
func (l *Lease) publish(opts Options) error {
	prev, err := readMeta(l.metaPath)
	if err != nil {
		return err
	}
	var epoch int64 = 1
	if prev != nil && prev.Epoch > 0 {
		epoch = prev.Epoch + 1
	}
	now := time.Now().UTC()
	m := Meta{
		Pid:         os.Getpid(),
		Host:        hostName(),
		BootID:      bootID(),
		AttemptID:   l.owner.AttemptID,
		Agent:       l.owner.Agent,
		SessionID:   l.owner.SessionID,
		Epoch:       epoch,
		StartedAt:   now,
		HeartbeatAt: now,
	}
	if opts.Heartbeat > 0 {
		m.HeartbeatIntervalMs = max(opts.Heartbeat.Milliseconds(), 1)
	}
	removeStaleTemps(l.fsys, l.metaPath)
	// Durable unless SyncLater: then the holder syncs it, and its
	// directory, later; it is kept open to be synced by SyncRecord, under
	// whatever name the record then has.
	p, err := prepareMeta(l.fsys, l.metaPath, &m, !opts.SyncLater, opts.SyncLater)
	if err != nil {
		return err
	}
	if err := p.commit(); err != nil {
		return err
	}
	l.syncMu.Lock()
	l.unsynced = p.open
	l.syncMu.Unlock()
	l.mu.Lock()
	l.meta = m
	l.prev = prev
	l.mu.Unlock()
	return nil
}

// LostAttempt says, for attempt attemptID that the transcript started and
// never ended, whether its end may be written now and with which reason.
// The holder is provably gone unless the previous holder was that attempt
// and still runs (its lock file was replaced under it: it will find itself
// fenced). The reason is "machine restarted" when that holder ran in an
// earlier boot, else "host lost".
func (l *Lease) LostAttempt(attemptID string) (reason string, gone bool) {
	if p := l.Previous(); p != nil && p.AttemptID == attemptID {
		if p.Running() {
			return "", false
		}
		if loss := (Status{State: Free, Meta: p}).Lost(); loss == MachineRestarted {
			return loss.String(), true
		}
	}
	return HostLost.String(), true
}

// Previous returns the record this acquisition replaced — the last
// holder's, as it was when the lock was taken — or nil when there was
// none. Since the lock was free, that holder is gone (see Status.Lost).
func (l *Lease) Previous() *Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prev == nil {
		return nil
	}
	m := *l.prev
	return &m
}

// removeStaleTemps deletes metadata temp files that a holder killed between
// writing and renaming left behind. Only the holder writes them, so under the
// lock every one that exists is stale.
func removeStaleTemps(fsys durable.FS, metaPath string) {
	for _, base := range []string{metaPath, beatPathOf(metaPath)} {
		stale, _ := filepath.Glob(filepath.Join(filepath.Dir(base), "."+globEscape(filepath.Base(base))+".tmp-*"))
		for _, p := range stale {
			_ = fsys.Remove(p)
		}
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// busyError builds the ErrBusy error for a lease another process holds. The
// holder may have locked without having written its metadata yet, leaving the
// previous holder's file in place; it waits briefly for metadata whose pid is
// alive before reporting what it has.
func busyError(path, metaPath string) error {
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		m, err := readMeta(metaPath)
		if err != nil {
			return &BusyError{Path: path}
		}
		if (m != nil && pidAlive(m.Pid)) || time.Now().After(deadline) {
			be := &BusyError{Path: path, Holder: m}
			if m != nil {
				be.HeartbeatAge = time.Since(m.HeartbeatAt)
			}
			return be
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pidAlive reports whether a process with this pid exists (EPERM counts as
// alive: it exists but belongs to someone else).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Path returns the transcript path the lease guards.
func (l *Lease) Path() string { return l.path }

// Owner returns the owner the lease was acquired for.
func (l *Lease) Owner() Owner { return l.owner }

// Epoch returns the fencing epoch of this lease; stamp it into every durable
// record written under the lease.
func (l *Lease) Epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta.Epoch
}

// Meta returns a copy of the metadata this holder last wrote.
func (l *Lease) Meta() Meta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta
}

// Release stops the heartbeat and unlocks the lease. It leaves the lease
// file and the metadata in place (the next holder reads the epoch from it).
// It is idempotent: later calls return the first call's result.
func (l *Lease) Release() error {
	l.releaseOnce.Do(func() {
		l.released.Store(true)
		l.stopHeartbeat()
		l.syncMu.Lock()
		if l.unsynced != nil {
			l.unsynced.Close() // never synced: nothing was written under it
			l.unsynced = nil
		}
		l.syncMu.Unlock()
		l.releaseErr = l.unlock()
	})
	return l.releaseErr
}

// SetBudget records the token budget of the holder's tree — its limit
// and what is left — in the holder's record, which the next heartbeat
// publishes for `ink status`. Safe for concurrent use.
func (l *Lease) SetBudget(limit, remaining int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.meta.Budget = &Budget{Limit: limit, Remaining: remaining}
}

// SyncRecord makes the content of an acquisition record published with
// Options.SyncLater durable; its directory entry becomes durable with the
// holder's next sync of the transcript's directory. It does nothing for a
// record already synced, and is safe to call more than once and
// concurrently with the heartbeat.
func (l *Lease) SyncRecord() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.unsynced == nil {
		return nil
	}
	f := l.unsynced
	l.unsynced = nil
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("sync lease metadata %s: %w", l.metaPath, err)
	}
	return nil
}

// unlock drops the flock and this process's registry claim.
func (l *Lease) unlock() error {
	err := l.fl.Unlock()
	held.drop(l.key, l)
	if err != nil {
		return fmt.Errorf("lease release %s: %w", l.leasePath, err)
	}
	return nil
}
