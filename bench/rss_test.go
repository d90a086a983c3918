package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// procSampler follows one process and its `ink worker` children (the
// workers of an ink supervisor; git and other tools it runs are left out)
// in /proc and
// records each one's peak resident set (VmHWM) as last seen while it was
// alive, and, when asked, the largest proportional set size (Pss) that
// the whole family had at one sample. VmHWM only grows, so the last sample
// is the best lower bound of a process's peak; the sampling period bounds
// how much a short-lived worker can add after its last sample.
type procSampler struct {
	parent int
	pss    bool
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	peaks    map[int]int64 // child pid -> VmHWM in KiB
	self     int64         // the parent's own VmHWM in KiB
	pssPeak  int64         // the largest Pss of the parent and its children together, KiB
	notChild map[int]bool  // pids seen with another parent
}

// sampleEvery is the /proc sampling period.
const sampleEvery = 5 * time.Millisecond

// startSampler samples parent and its ink children until finish; with pss
// it also sums their Pss at every sample (reading smaps_rollup costs the
// kernel a walk of each process's mappings, so it is off by default).
func startSampler(parent int, pss bool) *procSampler {
	s := &procSampler{parent: parent, pss: pss, stop: make(chan struct{}), done: make(chan struct{}),
		peaks: map[int]int64{}, notChild: map[int]bool{}}
	go s.loop()
	return s
}

func (s *procSampler) loop() {
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

// sample reads the parent and every ink process whose parent it is.
func (s *procSampler) sample() {
	var pssSum int64
	if kb, ok := statusField(s.parent, "\nVmHWM:"); ok {
		s.mu.Lock()
		s.self = max(s.self, kb)
		s.mu.Unlock()
	}
	if s.pss {
		if kb, ok := pssOf(s.parent); ok {
			pssSum += kb
		}
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
			ppid, _, ok := statOf(pid)
			if !ok {
				continue
			}
			if ppid != s.parent {
				s.mu.Lock()
				s.notChild[pid] = true
				s.mu.Unlock()
				continue
			}
			// A child forked to run git (or a worker) is a copy of its
			// parent until it execs: count it only once it is a worker.
			if !isWorker(pid) {
				continue
			}
		}
		if kb, ok := statusField(pid, "\nVmHWM:"); ok {
			s.mu.Lock()
			s.peaks[pid] = max(s.peaks[pid], kb)
			s.mu.Unlock()
		}
		if s.pss {
			if kb, ok := pssOf(pid); ok {
				pssSum += kb
			}
		}
	}
	s.mu.Lock()
	s.pssPeak = max(s.pssPeak, pssSum)
	s.mu.Unlock()
}

// finish stops sampling and returns every child's peak (KiB, sorted), the
// parent's own, and the largest Pss of the family at one sample (KiB).
func (s *procSampler) finish() (children []int64, self, pss int64) {
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
	return children, s.self, s.pssPeak
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

// isWorker reports whether pid runs `ink worker`.
func isWorker(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := bytes.Split(data, []byte{0})
	return len(args) > 1 && filepath.Base(string(args[0])) == "ink" && string(args[1]) == "worker"
}

// statusField reads a "kB" field of /proc/<pid>/status (key with its
// leading newline and colon); a process that is gone or a zombie (no
// memory left) reports false.
func statusField(pid int, key string) (int64, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	return kbField(data, key)
}

// pssOf reads the proportional set size of pid in KiB.
func pssOf(pid int) (int64, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, false
	}
	return kbField(append([]byte("\n"), data...), "\nPss:")
}

func kbField(data []byte, key string) (int64, bool) {
	_, rest, ok := bytes.Cut(data, []byte(key))
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
