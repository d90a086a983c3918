package crashfs_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/durable/crashfs"
)

// TestCrashKeepsOnlyWhatWasSynced: after a crash, a file survives with its
// synced content only when its directory entry was synced too, a directory
// only when its parent was synced, and an unsynced rename is undone.
func TestCrashKeepsOnlyWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "old"), []byte("there before"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsys, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	fsys.OnSync = func(op crashfs.Op) { ops = append(ops, op.String()) }
	write := func(p, text string, sync bool) {
		t.Helper()
		f, err := fsys.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	// a/b made durably; c made without syncing its parent.
	if err := durable.MkdirAll(fsys, filepath.Join(root, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Mkdir(filepath.Join(root, "c"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "a", "b", "kept"), "synced", true)
	write(filepath.Join(root, "a", "b", "kept"), " and more", false)
	write(filepath.Join(root, "a", "b", "entry-only"), "never synced", false)
	if err := fsys.SyncDir(filepath.Join(root, "a", "b")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "a", "b", "lost"), "synced but its entry is not", true)
	if err := durable.WriteFile(fsys, filepath.Join(root, "a", "atomic"), []byte("whole"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An unsynced rename over a durable file is undone.
	write(filepath.Join(root, "new"), "replacement", true)
	if err := fsys.Rename(filepath.Join(root, "new"), filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatal("OnSync saw no durable point")
	}
	if err := fsys.Restore(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"old":            "there before",
		"a/b/kept":       "synced",
		"a/b/entry-only": "",
		"a/atomic":       "whole",
		"a/b/":           "",
		"a/":             "",
	}
	got := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			got[rel+"/"] = ""
			return nil
		}
		data, _ := os.ReadFile(p)
		got[rel] = string(data)
		return nil
	})
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: got %q (present %v), want %q", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s survived the crash, but it was never made durable", k)
		}
	}
	if _, err := fsys.OpenFile(filepath.Join(root, "old"), os.O_RDONLY, 0); err == nil {
		t.Fatal("a crashed FS still opens files")
	}
	if !slices.Contains(ops, "syncdir "+root) {
		t.Errorf("MkdirAll did not sync the root that holds the directory it made: %v", ops)
	}
}

// TestJournaledKeepsEntriesNotData: in Journaled mode a crash keeps every
// name, each with only what was synced of its file.
func TestJournaledKeepsEntriesNotData(t *testing.T) {
	root := t.TempDir()
	rec := filepath.Join(root, "record")
	if err := os.WriteFile(rec, []byte("epoch 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsys, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	fsys.Mode = crashfs.Journaled
	f, err := fsys.OpenFile(filepath.Join(root, "beat"), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("epoch 1, alive"))
	f.Close()
	if err := fsys.Rename(filepath.Join(root, "beat"), rec); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Restore(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(rec)
	if err != nil || len(data) != 0 {
		t.Fatalf("record after the crash: %q, %v; want it empty, as an unsynced rename over it leaves it", data, err)
	}
}
