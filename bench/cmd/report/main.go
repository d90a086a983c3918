// Command report runs ink's benchmarks and writes docs/benchmarks.md:
// every figure beside its floor measured in the same loop, as a ratio,
// against its target, with the machine, the date and the load it ran
// under.
//
//	go run ./bench/cmd/report            # or: make bench
//	go run ./bench/cmd/report -raw FILE  # render saved `go test -bench` output
//	go run ./bench/cmd/report -only Resume -o FILE  # run some rows, save their output
//
// It runs the benchmarks of package bench one `go test` at a time. A
// failing benchmark stops it before anything is written.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// run is one `go test -bench` invocation.
type run struct {
	pkg       string
	pattern   string
	benchtime string
}

// runs are the invocations, in order. Each iteration of an end-to-end
// benchmark takes from a fraction of a second to several seconds, so they
// run a fixed count.
var runs = []run{
	{"./bench", "^BenchmarkTask$", "20x"},
	{"./bench", "^BenchmarkWarmChild$", "6x"},
	{"./bench", "^BenchmarkWarmBackToBack$", "6x"},
	{"./bench", "^BenchmarkRunNoDelegate$", "6x"},
	{"./bench", "^BenchmarkSpawn$", "20x"},
	{"./bench", "^BenchmarkFanOut$", "3x"},
	{"./bench", "^BenchmarkMaxParallel$", "3x"},
	{"./bench", "^BenchmarkResumeRead$", "5x"},
	{"./bench", "^BenchmarkResume$", "5x"},
	{"./bench", "^BenchmarkResumeBeside$", "5x"},
	{"./bench", "^BenchmarkLease$", "50x"},
	{"./bench", "^BenchmarkWorktree$", "3x"},
}

func main() {
	out := flag.String("o", "", "write the report here (default: docs/benchmarks.md in the module root)")
	raw := flag.String("raw", "", "render this saved `go test -bench` output instead of running the benchmarks")
	only := flag.String("only", "", "run only the benchmarks whose name matches this regular expression and write their raw output (to -o, or stderr alone); the report needs every row, so none is rendered")
	flag.Parse()
	if *only != "" {
		if *raw != "" {
			fmt.Fprintln(os.Stderr, "report: -only runs benchmarks and -raw renders saved output; give one of them")
			os.Exit(2)
		}
		if err := runOnly(*only, *out); err != nil {
			fmt.Fprintln(os.Stderr, "report: "+err.Error())
			os.Exit(1)
		}
		return
	}
	if err := report(*out, *raw); err != nil {
		fmt.Fprintln(os.Stderr, "report: "+err.Error())
		os.Exit(1)
	}
}

func report(out, raw string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(root, "docs", "benchmarks.md")
	}
	m := describeMachine(root)
	var output []byte
	if raw != "" {
		if output, err = os.ReadFile(raw); err != nil {
			return fmt.Errorf("read saved output: %w", err)
		}
	} else {
		if output, err = runAll(root, &m, runs); err != nil {
			return err
		}
	}
	results, err := parseBench(bytes.NewReader(output))
	if err != nil {
		return err
	}
	doc, err := render(m, results, string(output))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("create the report's directory: %w", err)
	}
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintln(os.Stderr, "report: wrote "+out)
	return nil
}

// runOnly runs the invocations whose benchmark name matches only and
// writes their output to out ("": stderr alone).
func runOnly(only, out string) error {
	re, err := regexp.Compile(only)
	if err != nil {
		return fmt.Errorf("-only %q is not a regular expression: %w", only, err)
	}
	var picked []run
	for _, r := range runs {
		if re.MatchString(strings.Trim(r.pattern, "^$")) {
			picked = append(picked, r)
		}
	}
	if len(picked) == 0 {
		var names []string
		for _, r := range runs {
			names = append(names, strings.Trim(r.pattern, "^$"))
		}
		return fmt.Errorf("-only %q matches no benchmark; they are: %s", only, strings.Join(names, ", "))
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	var m machine
	output, err := runAll(root, &m, picked)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: load average %s before, %s after; took %s\n", m.LoadBefore, m.LoadAfter, m.Took)
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, output, 0o644); err != nil {
		return fmt.Errorf("write the output: %w", err)
	}
	return nil
}

// runAll runs the benchmark invocations rs in the module root, echoing the
// output to stderr as it comes, and returns all of it.
func runAll(root string, m *machine, rs []run) ([]byte, error) {
	var all bytes.Buffer
	m.LoadBefore = loadAverage()
	began := time.Now()
	for _, r := range rs {
		args := []string{"test", "-run", "^$", "-bench", r.pattern, "-benchtime", r.benchtime, "-count", "1", "-timeout", "60m", r.pkg}
		fmt.Fprintf(os.Stderr, "report: go %s\n", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var buf bytes.Buffer
		cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
		cmd.Stderr = io.MultiWriter(&buf, os.Stderr)
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s failed (%v); nothing was written — fix the failing benchmark and run again", strings.Join(args, " "), err)
		}
		all.Write(buf.Bytes())
	}
	m.LoadAfter = loadAverage()
	m.Took = time.Since(began).Round(time.Second)
	return all.Bytes(), nil
}

// moduleRoot is the directory of the main module.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (run this inside the ink repository): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
