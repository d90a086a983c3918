package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// This file holds the in-memory Store and Workspaces the supervisor's
// tests run on: no flock, no file, no git. A transcript is the bytes a
// worker would have written (encoded and parsed by package session, so
// the supervisor reads them with the rules of a file); a lease is a
// record of who holds it.

// memHome is the in-memory state of one INK_HOME: its transcripts and
// leases, and its worktrees.
type memHome struct {
	store *memStore
	ws    *memWorkspaces
}

// memHomes holds the memHome of each INK_HOME a test used.
var memHomes sync.Map

// memHomeOf returns the memHome of inkHome, made on first use and
// forgotten when the test that made it ends.
func memHomeOf(t testing.TB, inkHome string) *memHome {
	h, loaded := memHomes.LoadOrStore(inkHome, &memHome{store: newMemStore(), ws: newMemWorkspaces()})
	if !loaded {
		t.Cleanup(func() { memHomes.Delete(inkHome) })
	}
	return h.(*memHome)
}

// memOrchestrator is an Orchestrator for unit tests of its reading logic,
// over an in-memory INK_HOME.
func memOrchestrator(t testing.TB, inkHome string) (*Orchestrator, *memStore) {
	h := memHomeOf(t, inkHome)
	return &Orchestrator{cfg: Config{InkHome: inkHome}, store: h.store, ws: h.ws}, h.store
}

// memStore is a Store in memory. It is safe for concurrent use.
type memStore struct {
	mu     sync.Mutex
	files  map[string][]byte
	leases map[string]*memLease
	// failSession, when set, is the error of every CreateSession.
	failSession error
	// lookups counts the calls that look a child up (Holders, FindChild).
	lookups atomic.Int64
	// synced is how many bytes of each shell session its writer synced.
	synced map[string]int
}

// memLease is one transcript's lease: its holder while held, the last
// holder once free.
type memLease struct {
	held bool
	hung time.Duration // a held lease whose heartbeat is this old (0: beating)
	meta lease.Meta
}

func newMemStore() *memStore {
	return &memStore{files: map[string][]byte{}, leases: map[string]*memLease{}, synced: map[string]int{}}
}

var _ Store = (*memStore)(nil)

// bytes returns the transcript at path, or nil.
func (s *memStore) bytes(path string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.files[path])
}

// put replaces the transcript at path (a test's edit of the file).
func (s *memStore) put(path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = slices.Clone(data)
}

// snapshot copies every transcript, by path.
func (s *memStore) snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for p, b := range s.files {
		out[p] = string(b)
	}
	return out
}

// acquire takes path's lease for owner, as lease.Acquire does: busy while
// held, the epoch one more than the last holder's.
func (s *memStore) acquire(path string, owner lease.Owner, pid int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[path]
	if l == nil {
		l = &memLease{}
		s.leases[path] = l
	}
	if l.held {
		m := l.meta
		return 0, &lease.BusyError{Path: path, Holder: &m}
	}
	host, _ := os.Hostname()
	now := time.Now().UTC()
	l.held, l.hung = true, 0
	l.meta = lease.Meta{Pid: pid, Host: host, AttemptID: owner.AttemptID, Agent: owner.Agent, SessionID: owner.SessionID,
		Epoch: l.meta.Epoch + 1, StartedAt: now, HeartbeatAt: now}
	return l.meta.Epoch, nil
}

// release frees path's lease when epoch still holds it.
func (s *memStore) release(path string, epoch int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[path]; l != nil && l.held && l.meta.Epoch == epoch {
		l.held, l.hung = false, 0
	}
}

// holds reports whether epoch still holds path's lease.
func (s *memStore) holds(path string, epoch int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[path]
	return l != nil && l.held && l.meta.Epoch == epoch
}

// setLease sets what path's lease record says (a test's edit).
func (s *memStore) setLease(path string, held bool, meta lease.Meta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[path] = &memLease{held: held, meta: meta}
}

// stall makes the heartbeat of path's held lease stop, age ago.
func (s *memStore) stall(path string, age time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[path]; l != nil && l.held {
		l.hung = age
	}
}

// create writes a new transcript: its header and first entries. It fails
// when one exists.
func (s *memStore) create(path string, h session.Header, first ...session.Entry) error {
	line, err := session.EncodeHeader(h)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[path]; ok {
		return fmt.Errorf("create transcript %s: %w", path, fs.ErrExist)
	}
	s.files[path] = line
	return s.appendLocked(path, first...)
}

// append appends entries to the transcript at path.
func (s *memStore) append(path string, entries ...session.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[path]; !ok {
		return fmt.Errorf("append to transcript %s: %w", path, fs.ErrNotExist)
	}
	return s.appendLocked(path, entries...)
}

func (s *memStore) appendLocked(path string, entries ...session.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	_, lines, err := session.EncodeEntries(entries...)
	if err != nil {
		return err
	}
	for _, l := range lines {
		s.files[path] = append(s.files[path], l...)
	}
	return nil
}

func (s *memStore) Open(path string, lean bool) (*session.Transcript, error) {
	s.mu.Lock()
	data, ok := s.files[path]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("open transcript: open %s: %w", path, fs.ErrNotExist)
	}
	return session.Parse(path, data)
}

func (s *memStore) Header(path string) (session.Header, error) {
	tr, err := s.Open(path, true)
	if err != nil {
		return session.Header{}, err
	}
	return tr.Header, nil
}

func (s *memStore) Tail(path string) (session.Tail, error) {
	tr, err := s.Open(path, true)
	if err != nil {
		return session.Tail{}, err
	}
	return tr.Tail(), nil
}

func (s *memStore) Lifetime(path string) (session.Lifetime, error) {
	tr, err := s.Open(path, true)
	if err != nil {
		return session.Lifetime{}, err
	}
	return tr.Lifetime(), nil
}

func (s *memStore) Exists(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.files[path]
	return ok
}

// under returns the transcripts whose path matches pattern, sorted.
func (s *memStore) under(pattern string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.files {
		if ok, _ := filepath.Match(pattern, p); ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// summary is what a listing says of the transcript at path.
func (s *memStore) summary(path string) (session.ChildSummary, *session.Transcript) {
	cs := session.ChildSummary{Path: path}
	tr, err := s.Open(path, true)
	if err != nil {
		// A body that does not parse leaves the header to list it by, as
		// a listing of files reads only the header to find a child.
		data := s.bytes(path)
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			if h, herr := session.Parse(path, data[:i+1]); herr == nil {
				cs.ID = h.Header.ID
				return cs, h
			}
		}
		cs.Problem = "malformed: " + err.Error()
		return cs, nil
	}
	cs.ID = tr.Header.ID
	if l := tr.Header.Launch; l == nil {
		cs.Problem = "missing-launch"
	} else if l.Agent != nil {
		cs.Agent = l.Agent.Name
	}
	tail := tr.Tail()
	switch {
	case tail.StartedSince:
		cs.LastStatus = session.StatusUnfinished
	case tail.LastEnd != nil:
		cs.LastStatus = tail.LastEnd.Status
	}
	for _, a := range tr.Attempts() {
		if a.Phase == session.PhaseStart {
			cs.Attempts++
		}
	}
	return cs, tr
}

func (s *memStore) Children(mainPath string) ([]session.ChildSummary, error) {
	parentID := ""
	if h, err := s.Header(mainPath); err == nil {
		parentID = h.ID
	}
	var out []session.ChildSummary
	for _, p := range s.under(filepath.Join(session.ChildrenDir(mainPath), "*.jsonl")) {
		cs, tr := s.summary(p)
		if cs.Problem == "" && parentID != "" {
			if tr.Header.Parent != parentID {
				cs.Problem = fmt.Sprintf("not-owned: its header names parent %q", tr.Header.Parent)
			} else if tr.Header.Launch.ParentSessionID != parentID {
				cs.Problem = fmt.Sprintf("not-owned: its launch record names parent %q", tr.Header.Launch.ParentSessionID)
			}
		}
		out = append(out, cs)
	}
	slices.SortFunc(out, func(a, b session.ChildSummary) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

func (s *memStore) FindChild(mainPath, parentID, childID string) (session.ChildInfo, error) {
	s.lookups.Add(1)
	if !session.ValidID(childID) {
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeBadID, Message: fmt.Sprintf("cannot resume child %q: not a child id", childID)}
	}
	kids, _ := s.Children(mainPath)
	var found []session.ChildSummary
	for _, k := range kids {
		if k.ID == childID {
			found = append(found, k)
		}
	}
	switch {
	case len(found) == 0:
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeNotFound,
			Message: fmt.Sprintf("cannot resume child %q: not-found: this session has no child with that id", childID)}
	case len(found) > 1:
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeAmbiguous,
			Message: fmt.Sprintf("cannot resume child %q: ambiguous: %d transcripts claim it", childID, len(found))}
	}
	k := found[0]
	switch {
	case strings.HasPrefix(k.Problem, "not-owned"):
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeNotOwned, Message: fmt.Sprintf("cannot resume child %q: %s", childID, k.Problem)}
	case k.Problem == "missing-launch":
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeMissingLaunch, Message: fmt.Sprintf("cannot resume child %q: %s has no launch record", childID, k.Path)}
	case k.Problem != "":
		return session.ChildInfo{}, &session.LookupError{Code: session.CodeMalformed, Message: fmt.Sprintf("cannot resume child %q: %s", childID, k.Problem)}
	}
	h, _ := s.Header(k.Path)
	return session.ChildInfo{Path: k.Path, Header: h}, nil
}

func (s *memStore) Sessions(inkHome, cwd string) ([]session.SessionSummary, error) {
	var out []session.SessionSummary
	for _, p := range s.under(filepath.Join(session.SessionsDir(inkHome, cwd), "*.jsonl")) {
		cs, tr := s.summary(p)
		ss := session.SessionSummary{ID: cs.ID, Path: p, LastStatus: cs.LastStatus}
		if tr == nil {
			ss.Problem = cs.Problem
		} else {
			ss.CreatedAt = tr.Header.CreatedAt
		}
		ss.Children = len(s.under(filepath.Join(session.ChildrenDir(p), "*.jsonl")))
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b session.SessionSummary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

func (s *memStore) Holders(inkHome, cwd, childID string, scan bool) ([]session.Holder, error) {
	s.lookups.Add(1)
	if !session.ValidID(childID) {
		return nil, &session.LookupError{Code: session.CodeBadID, Message: fmt.Sprintf("cannot resume child %q: not a child id", childID)}
	}
	var out []session.Holder
	for _, main := range s.under(filepath.Join(session.SessionsDir(inkHome, cwd), "*.jsonl")) {
		h, err := s.Header(main)
		if err != nil {
			continue
		}
		holds := false
		for _, k := range s.under(filepath.Join(session.ChildrenDir(main), "*.jsonl")) {
			named := filepath.Base(k) == childID+".jsonl"
			if !scan && !named {
				continue
			}
			kh, err := s.Header(k)
			if err == nil && kh.ID == childID || err != nil && named {
				holds = true
			}
		}
		if holds {
			out = append(out, session.Holder{Path: main, Header: h})
		}
	}
	slices.SortFunc(out, func(a, b session.Holder) int {
		if c := b.Header.CreatedAt.Compare(a.Header.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Header.ID, a.Header.ID)
	})
	return out, nil
}

func (s *memStore) Named(inkHome, id string) (mains, children []string) {
	return s.under(filepath.Join(inkHome, "sessions", "*", id+".jsonl")),
		s.under(filepath.Join(inkHome, "sessions", "*", "*", "children", id+".jsonl"))
}

func (s *memStore) Probe(path string) (lease.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[path]
	if l == nil {
		return lease.Status{State: lease.Free}, nil
	}
	m := l.meta
	switch {
	case !l.held:
		return lease.Status{State: lease.Free, Meta: &m}, nil
	case l.hung > 0:
		return lease.Status{State: lease.Hung, Meta: &m, HeartbeatAge: l.hung}, nil
	}
	return lease.Status{State: lease.Held, Meta: &m}, nil
}

func (s *memStore) Hold(path string, owner lease.Owner) (HeldTranscript, error) {
	epoch, err := s.acquire(path, owner, os.Getpid())
	if err != nil {
		return nil, err
	}
	return &memHeld{s: s, path: path, epoch: epoch}, nil
}

func (s *memStore) CreateSession(path string, owner lease.Owner, h session.Header, first ...session.Entry) (SessionWriter, error) {
	if s.failSession != nil {
		return nil, s.failSession
	}
	epoch, err := s.acquire(path, owner, os.Getpid())
	if err != nil {
		return nil, err
	}
	if err := s.create(path, h, first...); err != nil {
		s.release(path, epoch)
		return nil, err
	}
	return &memSession{s: s, path: path, epoch: epoch}, nil
}

// memHeld is a transcript of a memStore under a lease the supervisor took.
type memHeld struct {
	s     *memStore
	path  string
	epoch int64
}

func (h *memHeld) Read() (*session.Transcript, session.Lifetime, error) {
	tr, err := h.s.Open(h.path, false)
	if err != nil {
		return nil, session.Lifetime{}, err
	}
	if tr.Torn != nil {
		// What a killed writer left half written goes, as RepairTail
		// cuts it.
		data := h.s.bytes(h.path)
		if tr.Torn.NeedsNewline {
			data = append(data, '\n')
		} else {
			data = data[:tr.Torn.Offset]
		}
		h.s.put(h.path, data)
		if tr, err = h.s.Open(h.path, false); err != nil {
			return nil, session.Lifetime{}, err
		}
	}
	return tr, tr.Lifetime(), nil
}

func (h *memHeld) AppendAttempt(a session.AttemptEntry) error {
	if !h.s.holds(h.path, h.epoch) {
		return errors.New("the lease was lost")
	}
	return h.s.append(h.path, session.Entry{Attempt: &a})
}

func (h *memHeld) Release() error { h.s.release(h.path, h.epoch); return nil }

// memSession is a shell session of a memStore.
type memSession struct {
	s     *memStore
	path  string
	epoch int64
}

func (m *memSession) AppendMessage(msg model.Message) error {
	if !m.s.holds(m.path, m.epoch) {
		return errors.New("the session's lease was lost")
	}
	return m.s.append(m.path, session.Entry{Message: &msg})
}

// Sync marks what the session holds as durable (syncedBytes).
func (m *memSession) Sync() error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.synced[m.path] = len(m.s.files[m.path])
	return nil
}

func (m *memSession) Close() error { m.s.release(m.path, m.epoch); return nil }

// syncedBytes returns what a crash of the machine would leave of the shell
// session at path: what its writer synced.
func (s *memStore) syncedBytes(path string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.files[path][:s.synced[path]])
}

// memWorkspaces is a Workspaces in memory: a directory is a repository
// when repos names it, and each worktree is a record whose assessment the
// test sets. It is safe for concurrent use.
type memWorkspaces struct {
	mu    sync.Mutex
	repos map[string]worktree.Repo
	trees map[string]*memTree // by child id
	// failCreate, when set, is the error of every Create.
	failCreate error
}

// memTree is one worktree of memWorkspaces.
type memTree struct {
	info     worktree.Info
	state    worktree.State
	removed  bool
	problems []worktree.Problem
	synced   int
}

func newMemWorkspaces() *memWorkspaces {
	return &memWorkspaces{repos: map[string]worktree.Repo{}, trees: map[string]*memTree{}}
}

var _ Workspaces = (*memWorkspaces)(nil)

// addRepo makes dir a repository at commit head.
func (m *memWorkspaces) addRepo(dir, head string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.repos[dir] = worktree.Repo{Root: dir, Head: head}
}

// tree returns child id's worktree, or nil.
func (m *memWorkspaces) tree(id string) *memTree {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.trees[id]
}

// setState sets what child id's worktree holds.
func (m *memWorkspaces) setState(id string, st worktree.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trees[id].state = st
}

// setProblems sets what Validate says of child id's worktree.
func (m *memWorkspaces) setProblems(id string, p ...worktree.Problem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trees[id].problems = p
}

func (m *memWorkspaces) Detect(_ context.Context, dir string) (worktree.Repo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.repos[dir]
	if !ok {
		return worktree.Repo{}, fmt.Errorf("%s is not inside a git repository; retry the task without worktree", dir)
	}
	return r, nil
}

func (m *memWorkspaces) Create(_ context.Context, repo worktree.Repo, inkHome, childID string, origin worktree.Origin) (worktree.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failCreate != nil {
		return worktree.Record{}, m.failCreate
	}
	path := filepath.Join(inkHome, "worktrees", filepath.Base(repo.Root), childID)
	rec := worktree.Record{RepoRoot: repo.Root, Baseline: repo.Head, Path: path, Branch: "ink/" + childID, Cwd: path, Origin: &origin}
	m.trees[childID] = &memTree{info: worktree.Info{ChildID: childID, InkHome: inkHome, Record: rec, Registered: true,
		Locked: true, LockPID: os.Getpid(), LockPIDAlive: true, LockReason: fmt.Sprintf("ink %s pid %d", childID, os.Getpid())}, state: worktree.Clean}
	return rec, nil
}

func (m *memWorkspaces) Find(_ context.Context, _ string, childID string) (worktree.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.trees[childID]
	if !ok || t.removed {
		return worktree.Info{}, fmt.Errorf("no worktree for child %s", childID)
	}
	return t.info, nil
}

func (m *memWorkspaces) List(context.Context, string) ([]worktree.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []worktree.Info
	for _, t := range m.trees {
		if !t.removed {
			out = append(out, t.info)
		}
	}
	slices.SortFunc(out, func(a, b worktree.Info) int { return strings.Compare(a.ChildID, b.ChildID) })
	return out, nil
}

func (m *memWorkspaces) Lock(_ context.Context, rec worktree.Record, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.trees[rec.ChildID()]
	if !ok || t.removed {
		return fmt.Errorf("lock %s: no such worktree", rec.Path)
	}
	t.info.Locked, t.info.LockReason, t.info.LockPID, t.info.LockPIDAlive = true, reason, os.Getpid(), true
	return nil
}

func (m *memWorkspaces) Unlock(_ context.Context, rec worktree.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.trees[rec.ChildID()]; ok {
		t.info.Locked, t.info.LockReason, t.info.LockPID, t.info.LockPIDAlive = false, "", 0, false
	}
	return nil
}

func (m *memWorkspaces) Validate(_ context.Context, rec worktree.Record) []worktree.Problem {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.trees[rec.ChildID()]
	if !ok || t.removed {
		return []worktree.Problem{{Code: worktree.ProblemMissing, Message: fmt.Sprintf("the worktree %s was removed", rec.Path)}}
	}
	return t.problems
}

func (m *memWorkspaces) Sync(_ context.Context, rec worktree.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.trees[rec.ChildID()]; ok {
		t.synced++
	}
	return nil
}

func (m *memWorkspaces) assessLocked(rec worktree.Record) worktree.Assessment {
	t, ok := m.trees[rec.ChildID()]
	if !ok || t.removed {
		return worktree.Assessment{State: worktree.Unknown, Detail: "the worktree is gone"}
	}
	t.synced++
	a := worktree.Assessment{State: t.state}
	if t.state == worktree.WorkPresent {
		a.Detail, a.Shortstat = "1 commit", "1 file changed"
	}
	return a
}

func (m *memWorkspaces) Assess(_ context.Context, rec worktree.Record) worktree.Assessment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assessLocked(rec)
}

func (m *memWorkspaces) Settle(_ context.Context, rec worktree.Record) worktree.Outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.assessLocked(rec)
	if a.State != worktree.Clean {
		disp := worktree.DispositionKeptWork
		if a.State != worktree.WorkPresent {
			disp = worktree.DispositionKeptUnknown
		}
		return worktree.Outcome{Disposition: disp, Assessment: a, Text: worktree.Describe(a, rec)}
	}
	m.trees[rec.ChildID()].removed = true
	return worktree.Outcome{Disposition: worktree.DispositionRemoved, Assessment: a, Text: worktree.Describe(a, rec)}
}

// memWriter writes a transcript of a memStore the way a session.Writer
// writes a file, for tests that build a transcript by hand.
type memWriter struct {
	s    *memStore
	path string
}

// writer creates the transcript at path with header h.
func (s *memStore) writer(path string, h session.Header) (*memWriter, error) {
	if err := s.create(path, h); err != nil {
		return nil, err
	}
	return &memWriter{s: s, path: path}, nil
}

// AppendAttempt appends an attempt entry.
func (w *memWriter) AppendAttempt(a session.AttemptEntry) error {
	return w.s.append(w.path, session.Entry{Attempt: &a})
}

// AppendMessage appends a message entry.
func (w *memWriter) AppendMessage(m model.Message) (session.Entry, error) {
	return session.Entry{Message: &m}, w.s.append(w.path, session.Entry{Message: &m})
}

// Close does nothing: a memStore keeps every write at once.
func (w *memWriter) Close() error { return nil }
