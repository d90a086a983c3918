package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// TestMain removes the ink binary built for the benchmarks, if any was.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// inkBinary builds cmd/ink once per test binary and returns its path.
func inkBinary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ink-bench-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "ink")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/inkdev/ink/cmd/ink")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/ink: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return buildBin
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
