package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where and when the benchmarks ran.
type machine struct {
	Date       time.Time
	Commit     string
	CPU        string
	Cores      int
	Memory     string
	Kernel     string
	Go         string
	Git        string
	LoadBefore string
	LoadAfter  string
	Took       time.Duration
}

func describeMachine(root string) machine {
	m := machine{Date: time.Now().UTC(), Cores: runtime.NumCPU(), Go: runtime.Version()}
	m.Commit = command(root, "git", "rev-parse", "--short", "HEAD")
	// The report itself is not a change to what was measured.
	if command(root, "git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/benchmarks.md") != "" {
		m.Commit += " (with uncommitted changes)"
	}
	m.Git = strings.TrimPrefix(command(root, "git", "--version"), "git version ")
	m.Kernel = command(root, "uname", "-sr")
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.Memory = memory(procField("/proc/meminfo", "MemTotal"))
	return m
}

// command runs a command and returns its trimmed output ("" on failure).
func command(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memory renders a /proc/meminfo size such as "24683620 kB" in GiB.
func memory(v string) string {
	kb, ok := strings.CutSuffix(v, " kB")
	n, err := strconv.ParseFloat(kb, 64)
	if !ok || err != nil {
		return v
	}
	return fmt.Sprintf("%.1f GiB", n/(1<<20))
}

// loadAverage is the 1, 5 and 15 minute load average.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
