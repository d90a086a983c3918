package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// rssSampler follows the ink children of one process (the workers of the
// ink supervisor; git and other tools it runs are left out) in /proc and
// records each one's peak resident set (VmHWM) as last seen while
// it was alive. VmHWM only grows, so the last sample is the best lower bound
// of a process's peak; the sampling period bounds how much a short-lived
// worker can add after its last sample.
type rssSampler struct {
	parent int
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	peaks    map[int]int64 // child pid -> VmHWM in KiB
	self     int64         // the parent's own VmHWM in KiB
	notChild map[int]bool  // pids seen with another parent
}

// sampleEvery is the /proc sampling period.
const sampleEvery = 5 * time.Millisecond

func startRSSSampler(parent int) *rssSampler {
	s := &rssSampler{parent: parent, stop: make(chan struct{}), done: make(chan struct{}),
		peaks: map[int]int64{}, notChild: map[int]bool{}}
	go s.loop()
	return s
}

func (s *rssSampler) loop() {
	defer close(s.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// sample reads VmHWM of the parent and of every ink process whose parent it
// is.
func (s *rssSampler) sample() {
	if kb, ok := vmHWM(s.parent); ok {
		s.mu.Lock()
		s.self = max(s.self, kb)
		s.mu.Unlock()
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == s.parent {
			continue
		}
		s.mu.Lock()
		_, known := s.peaks[pid]
		skip := s.notChild[pid]
		s.mu.Unlock()
		if skip {
			continue
		}
		if !known {
			ppid, comm, ok := statOf(pid)
			if !ok {
				continue
			}
			if ppid != s.parent || comm != "ink" {
				s.mu.Lock()
				s.notChild[pid] = true
				s.mu.Unlock()
				continue
			}
		}
		if kb, ok := vmHWM(pid); ok {
			s.mu.Lock()
			s.peaks[pid] = max(s.peaks[pid], kb)
			s.mu.Unlock()
		}
	}
}

// finish stops sampling and returns every child's peak (KiB, sorted) and
// the parent's own.
func (s *rssSampler) finish() (children []int64, self int64) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, kb := range s.peaks {
		if kb > 0 {
			children = append(children, kb)
		}
	}
	sort.Slice(children, func(i, j int) bool { return children[i] < children[j] })
	return children, s.self
}

// statOf reads the parent pid and the command name from /proc/<pid>/stat.
func statOf(pid int) (ppid int, comm string, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", false
	}
	// "pid (comm) state ppid ...": the name may hold spaces and parentheses,
	// so it ends at the last ')'.
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return 0, "", false
	}
	f := bytes.Fields(data[end+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, string(data[open+1 : end]), err == nil
}

// vmHWM reads the peak resident set of pid in KiB; a process that is gone
// or a zombie (no memory left) reports false.
func vmHWM(pid int) (int64, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(data, []byte("\nVmHWM:"))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 1 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	return kb, err == nil
}

// maxRSS is the peak resident set in KiB that wait4 reported for a finished
// process (and its reaped descendants).
func maxRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
