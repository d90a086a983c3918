package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// modulePath is ink's Go module; `go run` of it is how a clone runs ink
// before it is installed.
const modulePath = "github.com/inkdev/ink"

// selfCommand is the command that runs this ink from the reader's current
// directory, for the hints ink prints (`… task --resume ID`): "ink" when
// the ink on PATH is this binary; `go run ./cmd/ink` (or the path from
// here to ink's cmd/ink) when this binary was built by `go run`; else the
// path it was started by. It is computed once.
var selfCommand = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "ink"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	wd, _ := os.Getwd()
	return commandFor(exe, os.Args[0], wd, exec.LookPath)
})

// commandFor is selfCommand for the binary exe started as arg0 from
// directory wd, with lookPath finding "ink" on PATH.
func commandFor(exe, arg0, wd string, lookPath func(string) (string, error)) string {
	if builtByGoRun(exe) {
		return goRunCommand(wd)
	}
	if p, err := lookPath("ink"); err == nil && sameFile(p, exe) {
		return "ink"
	}
	if strings.ContainsRune(arg0, filepath.Separator) {
		return shellWord(arg0)
	}
	return shellWord(exe)
}

// builtByGoRun reports whether exe was linked by `go run`: in a temporary
// work directory (…/go-build…/b001/exe/ink), or, since Go 1.24, in the
// build cache, which keeps the binaries `go run` builds of a module's
// main packages (…/go-build/aa/<64 hex digits>-d/ink).
func builtByGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "exe" && strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return true
	}
	return goCacheEntry().MatchString(filepath.Base(dir)) && len(filepath.Base(filepath.Dir(dir))) == 2
}

// goCacheEntry matches the directory the build cache keeps an executable
// in: its action ID in hex, then "-d". Compiled on first use, as every
// package-level pattern of ink is, so a process that never needs it
// never pays for it.
var goCacheEntry = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}-d$`) })

// goRunCommand is `go run` of ink's cmd/ink as typed from wd: a relative
// path inside a clone of ink, the module path anywhere else.
func goRunCommand(wd string) string {
	for dir := wd; dir != ""; {
		if isInkModule(filepath.Join(dir, "go.mod")) {
			rel, err := filepath.Rel(wd, filepath.Join(dir, "cmd", "ink"))
			if err != nil {
				break
			}
			if rel != "." && !strings.HasPrefix(rel, "..") {
				rel = "." + string(filepath.Separator) + rel
			}
			return "go run " + shellWord(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "go run " + modulePath + "/cmd/ink@latest"
}

// isInkModule reports whether the go.mod at path declares ink's module.
func isInkModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
