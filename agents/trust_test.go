package agents

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrustAddListRevokePersist(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	trust, err := LoadTrust(l.inkHome)
	if err != nil {
		t.Fatalf("LoadTrust with no file: %v", err)
	}
	if len(trust.List()) != 0 || trust.Trusted(l.project) {
		t.Fatalf("a new trust list is not empty: %v", trust.List())
	}

	// Add through a symlink: the real path is stored.
	link := filepath.Join(l.home, "app-link")
	if err := os.Symlink(l.project, link); err != nil {
		t.Fatal(err)
	}
	if err := trust.Add(link); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := trust.Add(l.project); err != nil {
		t.Fatalf("Add again: %v", err)
	}
	if got := trust.List(); len(got) != 1 || got[0] != l.project {
		t.Errorf("List = %v, want [%s]", got, l.project)
	}
	if !trust.Trusted(l.project) || !trust.Trusted(link) {
		t.Errorf("Trusted(project)=%v Trusted(link)=%v", trust.Trusted(l.project), trust.Trusted(link))
	}
	if trust.Trusted(filepath.Join(l.project, "sub")) || trust.Trusted(filepath.Dir(l.project)) {
		t.Errorf("trust leaks to a subdirectory or the parent")
	}

	path := filepath.Join(l.inkHome, "trust.json")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("trust.json mode %v, want 0600", info.Mode().Perm())
	}
	var file struct {
		Version int      `json:"version"`
		Roots   []string `json:"roots"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil || file.Version != 1 || len(file.Roots) != 1 || file.Roots[0] != l.project {
		t.Errorf("trust.json = %s (%v)", data, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(l.inkHome, ".trust-*"))
	if len(leftovers) != 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}

	reread, err := LoadTrust(l.inkHome)
	if err != nil || !reread.Trusted(l.project) {
		t.Fatalf("a second LoadTrust does not see the root: %v", err)
	}

	if err := reread.Revoke(link); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if reread.Trusted(l.project) {
		t.Errorf("still trusted after Revoke")
	}
	if err := reread.Revoke(l.project); !errors.Is(err, ErrNotTrusted) {
		t.Errorf("Revoke of an untrusted dir = %v, want ErrNotTrusted", err)
	}
	final, _ := LoadTrust(l.inkHome)
	if len(final.List()) != 0 {
		t.Errorf("Revoke was not saved: %v", final.List())
	}
}

func TestTrustRevokeOfARemovedDirectory(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	trust, _ := LoadTrust(l.inkHome)
	gone := filepath.Join(l.home, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trust.Add(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := trust.Revoke(gone); err != nil {
		t.Errorf("Revoke of a removed directory: %v", err)
	}
}

func TestTrustBadInput(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	trust, _ := LoadTrust(l.inkHome)
	if err := trust.Add(filepath.Join(l.home, "missing")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Add of a missing dir = %v", err)
	}
	file := filepath.Join(l.home, "file.txt")
	writeFile(t, file, "x")
	if err := trust.Add(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Add of a file = %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.inkHome, "trust.json")); !os.IsNotExist(err) {
		t.Errorf("a refused Add wrote trust.json")
	}

	writeFile(t, filepath.Join(l.inkHome, "trust.json"), "{not json")
	_, err := LoadTrust(l.inkHome)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(l.inkHome, "trust.json")+" is not valid JSON") || !strings.Contains(err.Error(), "ink trust DIR") {
		t.Errorf("LoadTrust of a corrupt file = %v", err)
	}
	writeFile(t, filepath.Join(l.inkHome, "trust.json"), `{"version":9,"roots":[]}`)
	if _, err := LoadTrust(l.inkHome); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("LoadTrust of a future version = %v", err)
	}
	if _, err := LoadTrust(""); err == nil {
		t.Errorf("LoadTrust(\"\") succeeded")
	}
}
