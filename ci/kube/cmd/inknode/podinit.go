package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// podInitCommand is the hidden subcommand inknode starts in a pod's new
// namespaces; it mounts the pod's volumes and becomes the container's
// process.
const podInitCommand = "podinit"

// initSpec is what podinit does, written by the agent as JSON.
type initSpec struct {
	Binds        []bind
	ReadOnlyRoot bool
	WorkDir      string
	Hostname     string
	Exec         string   // the binary to run
	Argv         []string // its argv, argv[0] included
	Network      bool     // the pod has a network namespace of its own: bring up lo
}

// bind is one volume mount.
type bind struct {
	Src, Dst string
	ReadOnly bool
}

// namespaces are the new namespaces of a pod: mount, PID and UTS, a
// network namespace when the agent is root (ownNetwork), and a user
// namespace mapping the agent's user to root when the agent is not root. The pod is its own process group, and dies with its agent.
func namespaces() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	if ownNetwork() {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	return attr
}

// podInit runs as PID 1 of the pod's namespaces: it makes the mounts
// private, mounts a fresh /proc and the volumes, keeps the binary visible at
// its path when a volume hides it, and executes the container's process in
// its own place.
func podInit(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "inknode podinit: want one argument, the spec file")
		return 127
	}
	if err := podInitErr(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "inknode podinit:", err)
		return 127
	}
	return 0 // not reached: exec replaced the process
}

func podInitErr(specPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec initSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if spec.Network {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
	}
	var before syscall.Stat_t
	if err := syscall.Stat(spec.Exec, &before); err != nil {
		return fmt.Errorf("exec %s: %w", spec.Exec, err)
	}
	exe, err := os.OpenFile(spec.Exec, unix.O_PATH, 0)
	if err != nil {
		return fmt.Errorf("exec %s: %w", spec.Exec, err)
	}
	// Parents before children: /tmp before /tmp/x.
	sort.SliceStable(spec.Binds, func(i, j int) bool {
		return strings.Count(filepath.Clean(spec.Binds[i].Dst), "/") < strings.Count(filepath.Clean(spec.Binds[j].Dst), "/")
	})
	// The volumes' sources live under the agent's state dir, which an
	// earlier mount (a volume at /tmp) may hide: hold them open first.
	srcs := make([]*os.File, len(spec.Binds))
	for i, m := range spec.Binds {
		if srcs[i], err = os.OpenFile(m.Src, unix.O_PATH|syscall.O_DIRECTORY, 0); err != nil {
			return fmt.Errorf("volume for %s: %w", m.Dst, err)
		}
	}
	for i, m := range spec.Binds {
		if err := os.MkdirAll(m.Dst, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", m.Dst, err)
		}
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", srcs[i].Fd()), m.Dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("mount %s: %w", m.Dst, err)
		}
		srcs[i].Close()
	}
	var after syscall.Stat_t
	if err := syscall.Stat(spec.Exec, &after); err != nil || after.Dev != before.Dev || after.Ino != before.Ino {
		// A volume hides the binary (the test's binary under /tmp, a
		// volume at /tmp): mount it back at its own path inside the volume.
		if err := os.MkdirAll(filepath.Dir(spec.Exec), 0o755); err != nil {
			return fmt.Errorf("exec %s hidden by a volume: %w", spec.Exec, err)
		}
		f, err := os.OpenFile(spec.Exec, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			return fmt.Errorf("exec %s hidden by a volume: %w", spec.Exec, err)
		}
		f.Close()
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", exe.Fd()), spec.Exec, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("exec %s hidden by a volume: %w", spec.Exec, err)
		}
	}
	exe.Close()
	for _, m := range spec.Binds {
		if m.ReadOnly {
			if err := syscall.Mount("", m.Dst, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("mount %s read-only: %w", m.Dst, err)
			}
		}
	}
	if spec.ReadOnlyRoot {
		if err := syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mount / read-only: %w", err)
		}
	}
	dir := spec.WorkDir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("working dir: %w", err)
	}
	if err := syscall.Exec(spec.Exec, spec.Argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", spec.Exec, err)
	}
	return nil
}
