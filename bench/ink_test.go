package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The binaries the benchmarks run, built once per test binary into one
// temporary directory: ink itself, and the floors built from sources in
// testdata — a Go program that does nothing (testdata/hello) and the
// smallest go-plugin plugin over gRPC (testdata/plugin).
var (
	buildOnce sync.Once
	buildDir  string
	bins      struct{ ink, hello, plugin string }
	buildErr  error
)

// TestMain removes the binaries built for the benchmarks, if any were, and
// plays a lease contender when asked to (see contender_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(contenderEnv) != "" {
		os.Exit(contend())
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build builds the binaries once.
func build(b *testing.B) {
	b.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ink-bench-")
		if buildErr != nil {
			return
		}
		bins.ink = filepath.Join(buildDir, "ink")
		bins.hello = filepath.Join(buildDir, "hello")
		bins.plugin = filepath.Join(buildDir, "plugin")
		for _, t := range []struct{ out, pkg string }{
			{bins.ink, "github.com/inkdev/ink/cmd/ink"},
			{bins.hello, "./testdata/hello"},
			{bins.plugin, "./testdata/plugin"},
		} {
			cmd := exec.Command("go", "build", "-o", t.out, t.pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", t.pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
}

// inkBinary builds the binaries once and returns ink's path.
func inkBinary(b *testing.B) string {
	b.Helper()
	build(b)
	return bins.ink
}

// hermetic is a private INK_HOME, HOME and working directory for the ink
// processes of one benchmark.
type hermetic struct {
	dir  string // working directory
	home string // INK_HOME
	vars []string
}

func newHermetic(b *testing.B) *hermetic {
	b.Helper()
	root := b.TempDir()
	h := &hermetic{dir: filepath.Join(root, "work"), home: filepath.Join(root, "inkhome")}
	for _, d := range []string{h.dir, filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	h.vars = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "INK_HOME=" + h.home,
		"LANG=C.UTF-8", "GIT_CONFIG_NOSYSTEM=1",
	}
	return h
}

// write puts a file in the working directory and returns its path.
func (h *hermetic) write(b *testing.B, name, body string) string {
	b.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// command is an ink command in the hermetic environment.
func (h *hermetic) command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = h.dir
	cmd.Env = h.vars
	return cmd
}

// run runs ink to the end and fails the benchmark on a non-zero exit.
func (h *hermetic) run(b *testing.B, bin string, args ...string) *os.ProcessState {
	b.Helper()
	cmd := h.command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("ink %v: %v\n%s", args, err, out)
	}
	return cmd.ProcessState
}
