package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plainWriters change a file the way programs other than ink do: in place
// (a shell redirection: truncate and write the same inode) or the way
// many editors save (write a new file and rename it over the old one).
var plainWriters = []struct {
	name   string
	script string // run by sh in the root with $1 = file, $2 = content
}{
	{"in place", `printf '%s' "$2" > "$1"`},
	{"rename over", `printf '%s' "$2" > "$1.new" && mv "$1.new" "$1"`},
}

// runPlain runs a plain writer (not ink) on rel inside k's root.
func runPlain(t *testing.T, k *kit, script, rel, content string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script, "sh", rel, content)
	cmd.Dir = k.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plain writer: %v: %s", err, out)
	}
}

// noTempFiles fails if a temporary file of edit or write is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".ink-") {
			t.Errorf("temporary file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// A file changed by a plain process after the agent read it, whether
// before its edit or write call or during it (after the call's own
// checks, just before the replace), is not overwritten: the call is
// refused with "re-read it first" and the file keeps the other writer's
// bytes. After a fresh read the change goes through.
func TestChangeByPlainProcessIsRefused(t *testing.T) {
	t.Parallel()
	changes := map[string]map[string]any{
		"edit":  {"path": "f.txt", "oldText": "mine", "newText": "agent's"},
		"write": {"path": "f.txt", "content": "agent's whole file\n"},
	}
	for tool, args := range changes {
		for _, w := range plainWriters {
			for _, when := range []string{"between the calls", "during the call"} {
				t.Run(tool+"/"+w.name+"/"+when, func(t *testing.T) {
					t.Parallel()
					var k *kit
					armed := false
					k = newKit(t, func(e *Env) {
						e.testHook = func(point string) {
							if point == hookBeforeWrite && armed {
								armed = false
								runPlain(t, k, w.script, "f.txt", "other writer's line\nmine\n")
							}
						}
					})
					p := k.write(t, "f.txt", "mine\n")
					wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
					if when == "between the calls" {
						runPlain(t, k, w.script, "f.txt", "other writer's line\nmine\n")
					} else {
						armed = true
					}
					wantError(t, k.run(t, tool, args), tool+": f.txt changed since you last read it; re-read it first")
					if got := readFile(t, p); got != "other writer's line\nmine\n" {
						t.Fatalf("the other writer's bytes were lost: file holds %q", got)
					}
					noTempFiles(t, k.root)

					wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
					wantOK(t, k.run(t, tool, args))
					if got := readFile(t, p); !strings.Contains(got, "agent's") {
						t.Fatalf("after a re-read the %s did not apply: %q", tool, got)
					}
					noTempFiles(t, k.root)
				})
			}
		}
	}
}

// A write that creates a file refuses, and keeps the other writer's
// bytes, when a plain process creates the same file while the write is
// under way.
func TestNewFileCreatedMeanwhileIsKept(t *testing.T) {
	t.Parallel()
	for _, w := range plainWriters {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			var k *kit
			k = newKit(t, func(e *Env) {
				e.testHook = func(point string) {
					if point == hookBeforeWrite {
						runPlain(t, k, w.script, "sub/new.txt", "theirs\n")
					}
				}
			})
			wantError(t, k.run(t, "write", map[string]any{"path": "sub/new.txt", "content": "mine\n"}),
				"write: sub/new.txt was created by someone else while you were writing it; read it first")
			if got := readFile(t, k.path("sub/new.txt")); got != "theirs\n" {
				t.Fatalf("file holds %q, want the other writer's bytes", got)
			}
			noTempFiles(t, k.path("sub"))
		})
	}
}

// When the file is removed or turned into a directory during the call,
// the change is refused, nothing is created in its place, and no
// temporary file is left.
func TestFileGoneDuringChangeIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(p string) error
	}{
		{"removed", os.Remove},
		{"replaced by a directory", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755)
		}},
	} {
		for _, tool := range []string{"edit", "write"} {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var k *kit
				k = newKit(t, func(e *Env) {
					e.testHook = func(point string) {
						if point == hookBeforeWrite {
							if err := tc.change(k.path("f.txt")); err != nil {
								t.Error(err)
							}
						}
					}
				})
				k.write(t, "f.txt", "mine\n")
				wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
				args := map[string]any{"path": "f.txt", "oldText": "mine", "newText": "x"}
				if tool == "write" {
					args = map[string]any{"path": "f.txt", "content": "x"}
				}
				wantError(t, k.run(t, tool, args), "f.txt changed since you last read it; re-read it first")
				fi, err := os.Lstat(k.path("f.txt"))
				switch tc.name {
				case "removed":
					if err == nil {
						t.Fatal("the removed file was recreated")
					}
				default:
					if err != nil || !fi.IsDir() {
						t.Fatalf("the directory was replaced: %v %v", fi, err)
					}
				}
				noTempFiles(t, k.root)
			})
		}
	}
}
