package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inkdev/ink/secret"
)

// What ink keeps of its logs in $INK_HOME/logs: each agent session's log
// (<session>.log, written by its workers) for logMaxAge after its last
// write, and no more than logMaxTotal of them, the oldest going first; and
// the supervisors' own ink.log up to hostLogMax, after which it becomes
// ink.log.1 (replacing the previous one). `ink run` and `ink task` prune
// as they start, beside their first agent's start, and wait for it as they
// end.
const (
	logMaxAge   = 14 * 24 * time.Hour
	logMaxTotal = 256 << 20
	hostLogMax  = 16 << 20
	hostLogName = "ink.log"
)

// pruneLogs removes the session logs in dir that are older than logMaxAge,
// then the oldest ones until the rest fit in logMaxTotal. It never touches
// the supervisors' log, and a file it cannot remove is left alone: pruning
// is housekeeping, never a reason to fail a run.
func pruneLogs(dir string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type logFile struct {
		path string
		mod  time.Time
		size int64
	}
	var keep []logFile
	var total int64
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".log") || name == hostLogName {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(dir, name)
		if now.Sub(fi.ModTime()) > logMaxAge {
			os.Remove(p)
			continue
		}
		keep = append(keep, logFile{p, fi.ModTime(), fi.Size()})
		total += fi.Size()
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].mod.Before(keep[j].mod) })
	for _, f := range keep {
		if total <= logMaxTotal {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// logger is ink's host-side logger: to $INK_HOME/logs/ink.log, never the
// terminal. A log past hostLogMax is moved to ink.log.1 first.
func logger(home string) (*slog.Logger, func()) {
	dir := filepath.Join(home, "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	path := filepath.Join(dir, hostLogName)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > hostLogMax {
		os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	h := secret.LogHandler(slog.NewJSONHandler(f, nil), secret.NewRedactor(secret.FromEnviron(os.Environ()), nil))
	return slog.New(h).With("pid", os.Getpid()), func() { f.Close() }
}
