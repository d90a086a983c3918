package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// skipMemoryFile is the file under INK_HOME that remembers which skipped
// profile files were already warned about.
const skipMemoryFile = "agent-warnings.json"

// skipMemory is the on-disk form of the memory: for each skipped file, the
// size and modification time of the version that was warned about.
type skipMemory struct {
	Version int                      `json:"version"`
	Files   map[string]skipFileState `json:"files"`
}

type skipFileState struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// fileState is the size and modification time of path now; ok is false
// when it cannot be read (a dangling link, for instance).
func fileState(path string) (skipFileState, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return skipFileState{}, false
	}
	return skipFileState{Size: info.Size(), ModTime: info.ModTime().UTC()}, true
}

// readSkipMemory reads the memory; a missing or unreadable file is an
// empty memory (the worst outcome is a warning given again).
func readSkipMemory(path string) skipMemory {
	mem := skipMemory{Version: 1, Files: map[string]skipFileState{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return mem
	}
	var read skipMemory
	if json.Unmarshal(data, &read) != nil || read.Version != 1 || read.Files == nil {
		return mem
	}
	return read
}

// writeSkipMemory writes the memory atomically: a temporary file beside
// it, synced, then renamed over it. Two ink processes writing at once lose
// nothing but a remembered warning.
func writeSkipMemory(path string, mem skipMemory) error {
	data, err := json.MarshalIndent(mem, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+skipMemoryFile+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Announce gives the warnings of a freshly loaded set, once per run of
// ink: each skipped file that was not warned about in this version before
// (its path, size and modification time are remembered in
// $INK_HOME/agent-warnings.json; an edited file is warned about again),
// then one summary line when any file is skipped ("3 agent files skipped —
// run `ink agents check`"), then the untrusted-project message and any
// problem with the model alias mapping. inkHome "" remembers nothing: every
// skipped file is warned about. warn is called synchronously. A failure
// to write the memory is itself not reported: the worst outcome is a
// warning given again next time.
func Announce(set *Set, inkHome string, warn func(string)) {
	if set == nil || warn == nil {
		return
	}
	for _, p := range rememberSkipped(set, inkHome) {
		warn("agent file " + p.Error() + "; skipped")
	}
	if n := len(set.problems); n > 0 {
		warn(skippedSummary(n))
	}
	if msg := set.UntrustedMessage(); msg != "" {
		warn(msg)
	}
	if msg := aliasWarning(set); msg != "" {
		warn(msg)
	}
}

// rememberSkipped records the set's skipped files, in their current
// version, in $INK_HOME/agent-warnings.json and returns those not warned
// about before in that version (all of them when inkHome is "").
func rememberSkipped(set *Set, inkHome string) []Problem {
	if inkHome == "" {
		return set.Problems()
	}
	path := filepath.Join(inkHome, skipMemoryFile)
	old := readSkipMemory(path)
	now := skipMemory{Version: 1, Files: map[string]skipFileState{}}
	var fresh []Problem
	for _, p := range set.problems {
		state, ok := fileState(p.Path)
		if ok {
			now.Files[p.Path] = state
		}
		if prev, seen := old.Files[p.Path]; ok && seen && prev.Size == state.Size && prev.ModTime.Equal(state.ModTime) {
			continue
		}
		fresh = append(fresh, p)
	}
	if !sameMemory(old, now) {
		_ = writeSkipMemory(path, now) // best effort: the worst outcome is a warning given again
	}
	return fresh
}

// aliasWarning says that the model alias mapping could not be read, or
// returns "".
func aliasWarning(set *Set) string {
	if set == nil || set.aliasErr == nil {
		return ""
	}
	return fmt.Sprintf("model aliases: %v; agents whose model: is a Claude alias are refused on providers other than anthropic until it is fixed", set.aliasErr)
}

// skippedSummary is the one line a run prints about skipped files.
func skippedSummary(n int) string {
	if n == 1 {
		return "1 agent file skipped — run `ink agents check` for the reason"
	}
	return fmt.Sprintf("%d agent files skipped — run `ink agents check` for the reasons", n)
}

func sameMemory(a, b skipMemory) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	for k, v := range a.Files {
		w, ok := b.Files[k]
		if !ok || w.Size != v.Size || !w.ModTime.Equal(v.ModTime) {
			return false
		}
	}
	return true
}
