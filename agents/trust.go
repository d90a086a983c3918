package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// trustFileName is the file under INK_HOME that lists trusted project roots.
const trustFileName = "trust.json"

// ErrNotTrusted is returned by Revoke for a directory that is not trusted.
var ErrNotTrusted = errors.New("not trusted")

// Trust is the list of project roots whose agent profiles may load, kept in
// $INK_HOME/trust.json. Every root is stored as its real path (symlinks
// resolved). A Trust is safe for concurrent use. Changes are written at once
// with an atomic rename; two processes changing the list at the same moment
// can lose one change (the last writer wins).
type Trust struct {
	mu    sync.Mutex
	path  string
	roots []string
}

// trustFile is the on-disk form of trust.json.
type trustFile struct {
	Version int      `json:"version"`
	Roots   []string `json:"roots"`
}

// LoadTrust reads $INK_HOME/trust.json. A missing file is an empty list; a
// corrupt one is an error that names the file and how to fix it.
func LoadTrust(inkHome string) (*Trust, error) {
	if inkHome == "" {
		return nil, errors.New("load trust: INK_HOME is empty; set INK_HOME or HOME")
	}
	t := &Trust{path: filepath.Join(inkHome, trustFileName)}
	data, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load trust: %w", err)
	}
	var file trustFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("load trust: %s is not valid JSON (%v); fix it, or delete it and run `ink trust DIR` again", t.path, err)
	}
	if file.Version != 1 {
		return nil, fmt.Errorf("load trust: %s has version %d, which this ink does not read; upgrade ink, or delete the file and run `ink trust DIR` again", t.path, file.Version)
	}
	for _, root := range file.Roots {
		if filepath.IsAbs(root) {
			t.roots = appendUnique(t.roots, filepath.Clean(root))
		}
	}
	sort.Strings(t.roots)
	return t, nil
}

// Path returns the file the list is kept in.
func (t *Trust) Path() string { return t.path }

// Add trusts dir (resolved to its real path, which must be an existing
// directory) and saves the list. Adding a trusted directory again is fine.
func (t *Trust) Add(dir string) error {
	real, err := filepath.Abs(dir)
	if err == nil {
		real, err = filepath.EvalSymlinks(real)
	}
	if err != nil {
		return fmt.Errorf("trust %s: %w", dir, unwrapPathError(err))
	}
	info, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("trust %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("trust %s: not a directory; give the project's root directory", dir)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.roots, real) {
		return nil
	}
	roots := append(append([]string(nil), t.roots...), real)
	sort.Strings(roots)
	if err := t.save(roots); err != nil {
		return fmt.Errorf("trust %s: %w", dir, err)
	}
	t.roots = roots
	return nil
}

// Revoke stops trusting dir and saves the list. dir may no longer exist. It
// returns an error wrapping ErrNotTrusted when dir was not trusted.
func (t *Trust) Revoke(dir string) error {
	key := realDir(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	var roots []string
	for _, root := range t.roots {
		if root != key && root != filepath.Clean(dir) {
			roots = append(roots, root)
		}
	}
	if len(roots) == len(t.roots) {
		return fmt.Errorf("revoke trust %s: %w", dir, ErrNotTrusted)
	}
	if err := t.save(roots); err != nil {
		return fmt.Errorf("revoke trust %s: %w", dir, err)
	}
	t.roots = roots
	return nil
}

// List returns the trusted roots, sorted.
func (t *Trust) List() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.roots...)
}

// Trusted reports whether dir (resolved to its real path) is a trusted root.
// Only the root itself is trusted, not directories inside it. A nil Trust
// trusts nothing.
func (t *Trust) Trusted(dir string) bool {
	if t == nil || dir == "" {
		return false
	}
	key := realDir(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.roots, key)
}

// save writes roots to the trust file: a temp file in the same directory,
// fsync, rename, 0600. The caller holds t.mu.
func (t *Trust) save(roots []string) error {
	if t.path == "" {
		return errors.New("this trust list has no file; load it with LoadTrust")
	}
	if roots == nil {
		roots = []string{}
	}
	data, err := json.MarshalIndent(trustFile{Version: 1, Roots: roots}, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(t.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".trust-*.json")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op after a successful rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmpName, t.path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}
