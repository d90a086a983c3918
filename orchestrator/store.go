package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// Store is what the supervisor reads of the state its workers own — their
// transcripts, the attempt records in them and the leases over them — and
// the few transcript writes it makes itself: the end of an attempt whose
// worker was lost, and a shell session (`ink task`, an `ink mcp`
// connection). Beside Launcher it is the seam a supervisor whose workers
// share no disk with it plugs into; the task, resume and recovery logic
// reach worker-owned state only through it. The default (fileStore) is
// INK_HOME's files; tests use an in-memory store. Implementations are safe
// for concurrent use.
type Store interface {
	// Open reads the whole transcript at path, as session.Open does (lean:
	// session.OpenLean).
	Open(path string, lean bool) (*session.Transcript, error)
	// Header reads the transcript's header (session.ReadHeader).
	Header(path string) (session.Header, error)
	// Tail reads the transcript's header and end (session.ReadTail).
	Tail(path string) (session.Tail, error)
	// Lifetime sums the transcript's attempts (session.ReadLifetime).
	Lifetime(path string) (session.Lifetime, error)
	// Exists reports whether a transcript (started or not) is at path.
	Exists(path string) bool
	// Children lists the children of the main transcript at mainPath
	// (session.ListChildren).
	Children(mainPath string) ([]session.ChildSummary, error)
	// FindChild finds child childID of the session at mainPath owned by
	// parentID (session.FindChild; refusals are *session.LookupError).
	FindChild(mainPath, parentID, childID string) (session.ChildInfo, error)
	// Sessions lists the main transcripts of cwd (session.ListSessions).
	Sessions(inkHome, cwd string) ([]session.SessionSummary, error)
	// Holders returns the main transcripts of cwd whose children hold
	// childID, newest first, by the children's names or, with scan, by
	// their headers (session.ChildHolders); it reads no transcript's body.
	Holders(inkHome, cwd, childID string, scan bool) ([]session.Holder, error)
	// Named returns the main transcripts, and the child transcripts, named
	// id in any cwd of inkHome.
	Named(inkHome, id string) (mains, children []string)
	// Probe says who holds the transcript's lease and whether its holder
	// is alive (lease.Probe).
	Probe(path string) (lease.Status, error)
	// Hold takes the transcript's lease for owner (lease.ErrBusy when a
	// live worker holds it), to write an attempt's end for a worker that
	// cannot. The caller releases it.
	Hold(path string, owner lease.Owner) (HeldTranscript, error)
	// CreateSession creates a shell session's transcript at path under its
	// lease, held for owner, with header h and first entries; its start is
	// made durable in the background (Sync waits for it). The caller
	// closes it.
	CreateSession(path string, owner lease.Owner, h session.Header, first ...session.Entry) (SessionWriter, error)
}

// HeldTranscript is a transcript whose lease the supervisor holds. It is
// used by one goroutine.
type HeldTranscript interface {
	// Read reads the transcript whole, its torn final line (left by a
	// killed writer) repaired first, and the sum of its attempts.
	Read() (*session.Transcript, session.Lifetime, error)
	// AppendAttempt appends an attempt entry, made durable, while the lease
	// holds.
	AppendAttempt(session.AttemptEntry) error
	// Release frees the lease.
	Release() error
}

// SessionWriter appends to a shell session the supervisor created. It is
// safe for concurrent use.
type SessionWriter interface {
	// AppendMessage appends m while the session's lease holds.
	AppendMessage(m model.Message) error
	// Sync makes what was written durable.
	Sync() error
	// Close closes the transcript and releases its lease.
	Close() error
}

// fileStore is the Store of INK_HOME's files: package session for
// transcripts, package lease for their leases. Its writes go through fs
// (nil: the real filesystem).
type fileStore struct {
	fs       durable.FS
	interval time.Duration
}

var _ Store = fileStore{}

func (s fileStore) Open(path string, lean bool) (*session.Transcript, error) {
	if lean {
		return session.OpenLean(path)
	}
	return session.Open(path)
}

func (fileStore) Header(path string) (session.Header, error) { return session.ReadHeader(path) }
func (fileStore) Tail(path string) (session.Tail, error)     { return session.ReadTail(path) }
func (fileStore) Lifetime(path string) (session.Lifetime, error) {
	return session.ReadLifetime(path)
}

func (fileStore) Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (fileStore) Children(mainPath string) ([]session.ChildSummary, error) {
	return session.ListChildren(mainPath)
}

func (fileStore) FindChild(mainPath, parentID, childID string) (session.ChildInfo, error) {
	return session.FindChild(mainPath, parentID, childID)
}

func (fileStore) Sessions(inkHome, cwd string) ([]session.SessionSummary, error) {
	return session.ListSessions(inkHome, cwd)
}

func (fileStore) Holders(inkHome, cwd, childID string, scan bool) ([]session.Holder, error) {
	return session.ChildHolders(inkHome, cwd, childID, scan)
}

func (fileStore) Named(inkHome, id string) (mains, children []string) {
	mains, _ = filepath.Glob(filepath.Join(inkHome, "sessions", "*", id+".jsonl"))
	children, _ = filepath.Glob(filepath.Join(inkHome, "sessions", "*", "*", "children", id+".jsonl"))
	return mains, children
}

func (fileStore) Probe(path string) (lease.Status, error) { return lease.Probe(path) }

func (s fileStore) Hold(path string, owner lease.Owner) (HeldTranscript, error) {
	l, err := lease.AcquireWith(path, owner, lease.Options{FS: s.fs})
	if err != nil {
		return nil, err
	}
	return &heldFile{path: path, fs: s.fs, l: l}, nil
}

func (s fileStore) CreateSession(path string, owner lease.Owner, h session.Header, first ...session.Entry) (SessionWriter, error) {
	syncDirs, err := durable.MkdirAllLater(s.fs, filepath.Dir(path), 0o700)
	if err != nil {
		return nil, err
	}
	l, err := lease.AcquireWith(path, owner, lease.Options{Heartbeat: s.interval, SyncLater: true, FS: s.fs})
	if err != nil {
		return nil, err
	}
	l.StartHeartbeat(s.interval)
	before := func() error {
		if err := syncDirs(); err != nil {
			return err
		}
		return l.SyncRecord()
	}
	w, _, err := session.CreateSyncing(s.fs, path, h, before, first...)
	if err != nil {
		l.Release()
		return nil, err
	}
	return &sessionFile{w: w, l: l}, nil
}

// heldFile is a transcript file under a lease the supervisor took.
type heldFile struct {
	path string
	fs   durable.FS
	l    *lease.Lease
	rt   *session.Resumable
}

func (h *heldFile) Read() (*session.Transcript, session.Lifetime, error) {
	rt, err := session.ReadForResume(h.path)
	if err != nil {
		return nil, session.Lifetime{}, err
	}
	if rt.Torn != nil {
		if _, err := rt.RepairTail(h.fs); err != nil {
			return nil, session.Lifetime{}, err
		}
	}
	tr, err := session.Open(h.path)
	if err != nil {
		return nil, session.Lifetime{}, err
	}
	h.rt = rt
	return tr, rt.Lifetime(), nil
}

func (h *heldFile) AppendAttempt(a session.AttemptEntry) error {
	if h.rt == nil {
		return errors.New("append to a held transcript before reading it")
	}
	w, err := h.rt.OpenWriter(h.fs)
	if err != nil {
		return err
	}
	if err := h.l.Check(); err != nil {
		w.Close()
		return err
	}
	if err := w.AppendAttempt(a); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func (h *heldFile) Release() error { return h.l.Release() }

// sessionFile is a shell session's transcript file and its lease.
type sessionFile struct {
	w *session.Writer
	l *lease.Lease
}

func (s *sessionFile) AppendMessage(m model.Message) error {
	if err := s.l.Check(); err != nil {
		return err
	}
	_, err := s.w.AppendMessage(m)
	return err
}

func (s *sessionFile) Sync() error { return s.w.Sync() }

func (s *sessionFile) Close() error {
	err := s.w.Close()
	if rerr := s.l.Release(); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("close the session: %w", err)
	}
	return nil
}
