package sandbox_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// TestSandboxConfinesWrites writes a file into each place under each mode
// and checks, from outside, which writes landed. Not parallel: it sets
// HOME and XDG_CACHE_HOME.
func TestSandboxConfinesWrites(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	extra := filepath.Join(d.sibling, "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	places := map[string]string{"root": d.root, "checkout": d.sibling, "home": d.home, "cache": d.cache, "tmp": d.tmp, "extra": extra}
	tests := []struct {
		mode     sandbox.Mode
		writable []string // the places a write lands in
	}{
		{sandbox.ReadOnly, []string{"tmp"}},
		{sandbox.WorkspaceWrite, []string{"tmp", "root", "cache", "extra"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			p := sandbox.Policy{Mode: tc.mode, TempDir: d.tmp, Root: d.root, Writable: []string{extra}}
			// WritableDirs makes the cache dir; make it anyway so that
			// read-only is tested against an existing one.
			if err := os.MkdirAll(d.cache, 0o700); err != nil {
				t.Fatal(err)
			}
			for name, dir := range places {
				target := filepath.Join(dir, string(tc.mode)+".txt")
				r := runIn(t, p, d.root, "echo written > "+target)
				if r.failure != nil {
					t.Fatalf("%s: the sandbox failed: %v", name, r.failure)
				}
				allowed := false
				for _, w := range tc.writable {
					allowed = allowed || w == name
				}
				if allowed {
					wantRan(t, r)
					if b, err := os.ReadFile(target); err != nil || string(b) != "written\n" {
						t.Errorf("%s: the write did not land: %q, %v", name, b, err)
					}
					continue
				}
				wantDenied(t, r)
				wantAbsent(t, target)
			}
		})
	}
}

// A grandchild, however it is started, is confined as bash is.
func TestSandboxConfinesGrandchildren(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp, Root: d.root}
	for name, script := range map[string]string{
		"sh -c":      `sh -c "touch ` + d.root + `/sh"`,
		"background": `(touch ` + d.root + `/bg) & wait $!`,
		"setsid":     `setsid -w touch ` + d.root + `/setsid`,
		"env -i":     `env -i /bin/sh -c "touch ` + d.root + `/envi"`,
	} {
		t.Run(name, func(t *testing.T) {
			r := runIn(t, p, d.root, script)
			wantDenied(t, r)
		})
	}
	entries, err := os.ReadDir(d.root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("the root changed: %v %v", entries, err)
	}
}

// What every command needs keeps working under the strictest mode: the
// null and random devices, pipes, process substitution, here-documents,
// /dev/stderr, running programs, and its temp dir.
func TestSandboxKeepsTheBasics(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp, Root: d.root}
	script := `set -e
echo gone > /dev/null
test "$(head -c 16 /dev/urandom | wc -c)" = 16
test "$(head -c 16 /dev/zero | wc -c)" = 16
echo to-stderr > /dev/stderr
cat <(echo from-process-substitution)
echo tee-ok | tee >(cat > /dev/null)
cat <<EOF
from-heredoc $(printf '%.0s-' $(seq 1 5000) | wc -c)
EOF
mktemp > /dev/null
mkdir "$TMPDIR/sub" && mv "$TMPDIR/sub" "$TMPDIR/moved"
ls / > /dev/null
echo done`
	r := runIn(t, p, d.root, script)
	wantRan(t, r)
	for _, w := range []string{"to-stderr", "from-process-substitution", "tee-ok", "from-heredoc 5000", "done"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("output lacks %q:\n%s", w, r.out)
		}
	}
}

// A command may open a pseudo-terminal and use its ioctls (what ssh,
// expect and test runners that want a tty do).
func TestSandboxKeepsTerminals(t *testing.T) {
	requireLandlock(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("util-linux script(1) is not installed; it opens the pseudo-terminal")
	}
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp, Root: d.root}
	r := runIn(t, p, d.root, `script -qec 'tty && stty size && echo via-pty' /dev/null`)
	wantRan(t, r)
	if !strings.Contains(r.out, "/dev/pts/") || !strings.Contains(r.out, "via-pty") {
		t.Fatalf("output:\n%s", r.out)
	}
}

// Moving, linking, truncating and removing are writes too: they work
// inside the writable directories and fail outside, and nothing outside
// changes. Not parallel: it sets HOME.
func TestSandboxMovesTruncatesRemoves(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root}
	keep := filepath.Join(d.sibling, "keep.txt")
	if err := os.WriteFile(keep, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inside := `set -e
mkdir -p a b
echo x > a/f
mv a/f b/f
ln b/f a/hard
mv b "$TMPDIR/b"
truncate -s 0 a/hard`
	wantRan(t, runIn(t, p, d.root, inside))
	if _, err := os.Stat(filepath.Join(d.tmp, "b", "f")); err != nil {
		t.Fatalf("a move across writable directories did not happen: %v", err)
	}
	for name, script := range map[string]string{
		"move out":        "echo x > out && mv out " + d.sibling + "/",
		"move in":         "mv " + keep + " .",
		"link out":        "echo x > out2 && ln out2 " + d.sibling + "/link",
		"symlink":         "ln -s /etc/passwd " + d.sibling + "/sym",
		"truncate":        "truncate -s 0 " + keep,
		"truncate(2)":     `"$INK_TEST_BIN" ink-test-truncate ` + keep,
		"remove":          "rm -f " + keep,
		"mkdir":           "mkdir " + d.sibling + "/dir",
		"append":          "echo more >> " + keep,
		"cp over":         "cp /etc/hostname " + keep,
		"remove checkout": "rm -rf " + d.sibling,
	} {
		t.Run(name, func(t *testing.T) {
			r := runIn(t, p, d.root, script)
			if r.code == 0 {
				t.Fatalf("allowed:\n%s", r.out)
			}
			if out := strings.ToLower(r.out); !strings.Contains(out, "permission denied") && !strings.Contains(out, "invalid cross-device link") {
				t.Fatalf("want a permission error, got:\n%s", r.out)
			}
		})
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious\n" {
		t.Fatalf("the file outside changed: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(d.sibling)
	if len(entries) != 1 {
		t.Fatalf("the checkout gained entries: %v", entries)
	}
}

// The hidden command executes the program in its own place: the pid the
// caller started is the program's, and so is the process group.
func TestSandboxExecsInPlace(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp, Root: d.root}
	r := runIn(t, p, d.root, `echo "$$ $(ps -o pgid= -p $$)"`)
	wantRan(t, r)
	fields := strings.Fields(r.out)
	if len(fields) != 2 || fields[0] != strconv.Itoa(r.pid) || fields[1] != strconv.Itoa(r.pid) {
		t.Fatalf("bash reports pid and group %q; the caller started pid %d", r.out, r.pid)
	}
}

// A sandboxed command cannot open the memory of a process outside its
// sandbox (its parent here), nor, from Landlock ABI 6 on, signal it.
func TestSandboxProtectsOtherProcesses(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	p := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root}
	r := runIn(t, p, d.root, `head -c 1 /proc/$PPID/mem`)
	if r.code == 0 || !strings.Contains(r.out, "Permission denied") {
		t.Fatalf("the parent's memory could be opened (exit %d):\n%.200s", r.code, r.out)
	}
	r = runIn(t, p, d.root, `kill -0 $PPID && echo signalled`)
	if sandbox.ABI() >= 6 {
		if r.code == 0 || !strings.Contains(r.out, "Operation not permitted") {
			t.Fatalf("the parent could be signalled (exit %d):\n%s", r.code, r.out)
		}
	} else {
		t.Logf("Landlock ABI %d: signals are not scoped here", sandbox.ABI())
	}
}

// When the policy cannot be applied the program does not run, the caller
// learns why over the status pipe, and the exit code is 126.
func TestSandboxFailureIsReported(t *testing.T) {
	requireLandlock(t)
	d := newDirs(t)
	marker := filepath.Join(d.tmp, "ran")
	gone := filepath.Join(d.sibling, "gone")
	r := runIn(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root, Writable: []string{gone}}, d.root, "touch "+marker)
	if r.failure == nil || !strings.Contains(r.failure.Error(), "workspace-write sandbox could not be applied: writable directory: stat "+gone+": no such file or directory") {
		t.Fatalf("failure = %v", r.failure)
	}
	if r.code != 126 || r.out != "" {
		t.Fatalf("exit %d, output %q; want 126 and nothing", r.code, r.out)
	}
	wantAbsent(t, marker)

	cmd := exec.Command("/nonexistent/bash", "-c", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l, err := sandbox.Wrap(cmd, testExe, sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp})
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	l.Started()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if f := l.Failure(); f == nil || !strings.Contains(f.Error(), "cannot run /nonexistent/bash in the read-only sandbox: no such file or directory") {
		t.Fatalf("failure = %v", f)
	}
}

// Run by hand with a bad command line, the hidden command says so and
// runs nothing.
func TestMainBadCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no program to run"},
		{[]string{"-bogus"}, "bad command line"},
		{[]string{"-write", "/tmp", "--", "no-such-program-here"}, `cannot run no-such-program-here: exec: "no-such-program-here": executable file not found in $PATH`},
		{[]string{"-path", "bin/true", "-write", "/tmp", "--", "true"}, `the program "bin/true" is not an absolute path`},
		{[]string{"-path", "/bin/true", "--", "true"}, "no writable directory given"},
		{[]string{"-path", "/bin/true", "-write", "tmp", "--", "true"}, `writable directory "tmp" is not an absolute path`},
	}
	for _, tc := range tests {
		cmd := exec.Command(testExe, append([]string{sandbox.Command}, tc.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 126 {
			t.Errorf("%v: %v, want exit 126", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// On a machine without Landlock the hidden command refuses to run the
// program rather than run it unconfined.
func TestSandboxRefusesWithoutLandlock(t *testing.T) {
	if err := sandbox.Check(); err == nil {
		t.Skip("this kernel has Landlock; the confinement tests cover it")
	}
	d := newDirs(t)
	marker := filepath.Join(d.root, "ran")
	r := runIn(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root}, d.root, "touch "+marker)
	if r.failure == nil || !strings.Contains(r.failure.Error(), "Landlock") || r.code != 126 {
		t.Fatalf("failure = %v, exit %d", r.failure, r.code)
	}
	wantAbsent(t, marker)
}
