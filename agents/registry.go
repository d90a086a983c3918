package agents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce is how long the watcher waits after the last change before
// it reloads, so that one save (often several events) is one reload.
const reloadDebounce = 100 * time.Millisecond

// Registry holds the current profiles and replaces them when the profile
// directories change. It is safe for concurrent use.
type Registry struct {
	current atomic.Pointer[Set]
	done    chan struct{}
	// stop asks the watcher to stop; it closes the channel it is given
	// once its watches are removed.
	stop     chan chan struct{}
	stopOnce sync.Once
}

// Current returns the profiles as of the latest reload. The Set never
// changes; a later reload makes a new one.
func (r *Registry) Current() *Set { return r.current.Load() }

// Done is closed when the watcher has stopped (its context ended or Stop
// was called) and released its file descriptors. Current keeps returning
// the last Set.
func (r *Registry) Done() <-chan struct{} { return r.done }

// Stop stops watching without waiting for the watcher to be torn down: it
// returns once every watch is removed, and the inotify descriptor is
// closed in the background. Closing it is what costs (the kernel waits for
// its readers to drain, about 10 ms, also when the process exits with it
// open); with no watch left by then, most of that is over before anyone
// waits for it. Current keeps returning the last Set. Stop is idempotent
// and safe for concurrent use; cancelling Watch's context stops the
// watcher the same way.
func (r *Registry) Stop() {
	r.stopOnce.Do(func() {
		removed := make(chan struct{})
		select {
		case r.stop <- removed:
			<-removed
		case <-r.done:
		}
	})
}

// Watch loads the profiles of opts and keeps them current: it watches the
// profile directories and every subdirectory they hold (symbolic links to
// directories included), and their parents, so that a directory created or
// removed later is noticed, and reloads every profile after a change, once
// changes have been quiet for about 100 ms. A file that fails to parse keeps
// its last good version; a deleted file drops its profile. A profile whose
// file was not there, or not as it is now, at the first load is marked
// Reloaded: it was written while the run was going. When opts.Trust
// is set and $INK_HOME/trust.json changes, the trust list is re-read; when
// $INK_HOME/models.yaml changes, the model aliases are.
//
// onWarn (may be nil) gets the first load's warnings through Announce,
// before Watch returns (skipped files once per file version, one summary
// line, the untrusted-project message), then, from the watcher's
// goroutine, one warning per new problem of a later reload: "agent file
// PATH:LINE: reason; skipped", "agent file PATH:LINE: reason; keeping the
// previous version", or the untrusted-project message. logger (may be nil)
// gets debug lines for reloads and watcher errors.
//
// The watcher stops, and releases its inotify descriptors, when ctx ends.
// Watch fails only when the file watcher cannot start (for example when the
// system's inotify limits are reached); callers can fall back to Load.
func Watch(ctx context.Context, opts LoadOptions, logger *slog.Logger, onWarn func(string)) (*Registry, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if onWarn == nil {
		onWarn = func(string) {}
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch agent profiles: %w (the system's inotify limits may be reached; raise fs.inotify.max_user_instances)", err)
	}
	w := &profileWatcher{
		opts:    opts,
		fs:      fw,
		logger:  logger,
		onWarn:  onWarn,
		reg:     &Registry{done: make(chan struct{}), stop: make(chan chan struct{})},
		watched: map[string]bool{},
		warned:  map[string]bool{},
		addErrs: map[string]bool{},
	}
	w.reload(true)
	go w.run(ctx)
	return w.reg, nil
}

// profileWatcher is the state of one Watch; only its goroutine touches it
// after Watch returns.
type profileWatcher struct {
	opts     LoadOptions
	fs       *fsnotify.Watcher
	logger   *slog.Logger
	onWarn   func(string)
	reg      *Registry
	lastGood map[string]Profile
	// initial is every profile file of the first load (its source and the
	// sha256 of its bytes): a profile that is not in it, as it is now, was
	// written during the run and is marked Reloaded.
	initial  map[string]string
	watched  map[string]bool // paths added to fs
	treeDirs map[string]bool // profile directories and their subdirectories, as of the last load
	warned   map[string]bool // warnings already given, by text
	addErrs  map[string]bool // watch failures already reported, by text
}

func (w *profileWatcher) run(ctx context.Context) {
	defer close(w.reg.done)
	defer w.fs.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			w.removeWatches()
			return
		case removed := <-w.reg.stop:
			w.removeWatches()
			close(removed)
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if !w.relevant(ev) {
				continue
			}
			timer.Reset(reloadDebounce)
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			w.logger.Debug("agent profile watcher error", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				timer.Reset(reloadDebounce) // events were lost: reload to be sure
			}
		case <-timer.C:
			if w.reload(false) {
				// A directory appeared: files written into it before its
				// watch was added are seen by one more reload.
				timer.Reset(reloadDebounce)
			}
		}
	}
}

// reload reloads the trust list (when one is in use: INK_HOME may have
// been created together with trust.json before its watch was added) and
// every profile, then brings the watches up to date, reporting whether it
// added one. The first load announces its warnings (Announce); later ones
// warn about what is new.
func (w *profileWatcher) reload(first bool) (newWatches bool) {
	var messages []string
	if w.opts.Trust != nil && w.opts.InkHome != "" {
		if t, err := LoadTrust(w.opts.InkHome); err != nil {
			messages = append(messages, err.Error()+"; keeping the previous trust list")
		} else {
			w.opts.Trust = t
		}
	}
	out := load(w.opts, w.lastGood)
	if first {
		w.initial = map[string]string{}
		for src, p := range out.good {
			w.initial[src] = p.RoleSHA256
		}
	} else {
		w.markReloaded(out)
	}
	w.lastGood = out.good
	w.reg.current.Store(out.set)
	w.treeDirs = map[string]bool{}
	for _, dir := range out.set.watchDirs {
		w.treeDirs[filepath.Clean(dir)] = true
	}
	newWatches = w.syncWatches()
	w.logger.Debug("agent profiles loaded", "agents", len(out.set.names), "problems", len(out.set.problems))

	if first {
		for _, msg := range messages {
			w.onWarn(msg) // a trust.json problem
		}
		Announce(out.set, w.opts.InkHome, w.onWarn)
	}
	kept := map[Problem]bool{}
	for _, p := range out.kept {
		kept[p] = true
	}
	for _, p := range out.set.problems {
		if kept[p] {
			messages = append(messages, "agent file "+p.Error()+"; keeping the previous version")
		} else {
			messages = append(messages, "agent file "+p.Error()+"; skipped")
		}
	}
	if msg := out.set.UntrustedMessage(); msg != "" {
		messages = append(messages, msg)
	}
	if msg := aliasWarning(out.set); msg != "" {
		messages = append(messages, msg)
	}
	if !first {
		// What is warned about below is remembered first, so that the next
		// run of ink does not warn about it again.
		rememberSkipped(out.set, w.opts.InkHome)
	}
	// Later reloads warn once per message while it holds; a problem fixed
	// and broken again is warned about again.
	warned := map[string]bool{}
	for _, msg := range messages {
		if !first && !w.warned[msg] {
			w.onWarn(msg)
		}
		warned[msg] = true
	}
	w.warned = warned
	return newWatches
}

// markReloaded marks the profiles of out whose file is not as the first
// load read it (Profile.Reloaded).
func (w *profileWatcher) markReloaded(out loaded) {
	changed := func(p Profile) bool {
		sha, ok := w.initial[p.Source]
		return !ok || sha != p.RoleSHA256
	}
	for src, p := range out.good {
		if changed(p) {
			p.Reloaded = true
			out.good[src] = p
		}
	}
	for name, p := range out.set.byName {
		if changed(p) {
			p.Reloaded = true
			out.set.byName[name] = p
		}
	}
}

// removeWatches removes every watch, so that closing the watcher finds
// none left to tear down.
func (w *profileWatcher) removeWatches() {
	for path := range w.watched {
		_ = w.fs.Remove(path)
		delete(w.watched, path)
	}
}

// targets are the profile directories being watched for.
func (w *profileWatcher) targets() []string { return w.opts.Dirs() }

// syncWatches watches every profile directory that exists with all its
// subdirectories, and the nearest existing ancestor of each profile
// directory (its parent when that exists), and stops watching what is no
// longer needed. It reports whether it added a watch.
func (w *profileWatcher) syncWatches() (added bool) {
	want := map[string]bool{}
	for dir := range w.treeDirs {
		want[dir] = true
	}
	for _, dir := range w.targets() {
		if isDir(dir) {
			want[dir] = true
		}
		for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
			if isDir(parent) {
				want[parent] = true
				break
			}
			if filepath.Dir(parent) == parent {
				break
			}
		}
	}
	for path := range w.watched {
		if !want[path] {
			_ = w.fs.Remove(path) // already gone when the directory was removed
			delete(w.watched, path)
		}
	}
	for path := range want {
		if w.watched[path] {
			continue
		}
		if err := w.fs.Add(path); err != nil {
			msg := fmt.Sprintf("agent hot reload: cannot watch %s: %v; changes there are seen after ink restarts", path, err)
			w.logger.Debug("agent profile watch failed", "path", path, "err", err)
			if !w.addErrs[msg] {
				w.addErrs[msg] = true
				w.onWarn(msg)
			}
			continue
		}
		w.watched[path] = true
		added = true
	}
	return added
}

// relevant reports whether ev may change the loaded profiles: a *.md file
// in a profile directory or one of its subdirectories, a directory there
// appearing or going away, a profile directory or one of its ancestors
// appearing or going away, the trust file or the model alias file.
func (w *profileWatcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod || ev.Op == 0 {
		return false
	}
	name := filepath.Clean(ev.Name)
	if w.isTrustFile(name) || w.isAliasFile(name) {
		return true
	}
	if w.treeDirs[filepath.Dir(name)] {
		if strings.HasSuffix(name, ".md") || w.treeDirs[name] || w.watched[name] || isDir(name) {
			return true
		}
	}
	for _, dir := range w.targets() {
		if filepath.Dir(name) == dir && strings.HasSuffix(name, ".md") {
			return true
		}
		if name == dir || strings.HasPrefix(dir, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (w *profileWatcher) isAliasFile(name string) bool {
	if w.opts.InkHome == "" {
		return false
	}
	home, err := filepath.Abs(w.opts.InkHome)
	return err == nil && filepath.Clean(name) == filepath.Join(home, ModelAliasesFile)
}

func (w *profileWatcher) isTrustFile(name string) bool {
	if w.opts.InkHome == "" || w.opts.Trust == nil {
		return false
	}
	home, err := filepath.Abs(w.opts.InkHome)
	return err == nil && filepath.Clean(name) == filepath.Join(home, trustFileName)
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
