package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Namespaces is how `ink sandbox-exec` gets the private mount namespace
// in which it mounts a checkout's git state read-only (Landlock cannot
// make a hole in a writable tree). Its zero value is NoNamespaces.
type Namespaces string

const (
	// NoNamespaces: this machine gives none; nothing can be mounted
	// read-only.
	NoNamespaces Namespaces = ""
	// MountNamespace: a new mount namespace alone (CLONE_NEWNS), which
	// needs CAP_SYS_ADMIN: ink runs as root.
	MountNamespace Namespaces = "mount"
	// UserNamespace: a new user namespace that maps the user to
	// themselves, and a mount namespace it owns (CLONE_NEWUSER and
	// CLONE_NEWNS): unprivileged user namespaces.
	UserNamespace Namespaces = "user"
)

// apply sets the clone flags (and the identity maps) on a that start a
// process in n.
func (n Namespaces) apply(a *syscall.SysProcAttr) {
	switch n {
	case MountNamespace:
		a.Cloneflags |= syscall.CLONE_NEWNS
	case UserNamespace:
		a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// NamespacesUnavailableError says why no private mount namespace could be
// had, and what would give one.
type NamespacesUnavailableError struct {
	// Tried are the failures, one per kind of namespace tried.
	Tried []string
	// Hint is how to enable them on this machine, when ink can tell.
	Hint string
}

func (e *NamespacesUnavailableError) Error() string {
	msg := "the git directory cannot be made read-only: no private mount namespace (" + strings.Join(e.Tried, "; ") + ")"
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ProbeNamespaces finds how this machine gives `ink sandbox-exec` a
// private mount namespace: it starts exe (the ink binary) as the hidden
// command in each kind (MountNamespace first when running as root, then
// UserNamespace) and has it mount a scratch directory read-only and fail
// to write there. It returns the first kind that works, or NoNamespaces
// and a *NamespacesUnavailableError. It costs one short process per kind
// tried; call it once and keep the answer.
func ProbeNamespaces(exe string) (Namespaces, error) {
	kinds := []Namespaces{UserNamespace}
	if os.Geteuid() == 0 {
		kinds = []Namespaces{MountNamespace, UserNamespace}
	}
	var tried []string
	for _, n := range kinds {
		err := probe(exe, n)
		if err == nil {
			return n, nil
		}
		var startErr *exec.Error
		if errors.As(err, &startErr) || errors.Is(err, fs.ErrNotExist) {
			return NoNamespaces, fmt.Errorf("probe mount namespaces: %w", err)
		}
		tried = append(tried, fmt.Sprintf("%s namespace: %v", n, err))
	}
	return NoNamespaces, &NamespacesUnavailableError{Tried: tried, Hint: namespaceHint()}
}

// probe runs one probe in n.
func probe(exe string, n Namespaces) error {
	dir, err := os.MkdirTemp("", "ink-ns-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	host, err := mountNamespaceID()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, Command, "-probe", "-host-mntns", host, "-ro", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	n.apply(cmd.SysProcAttr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
}

// namespaceHint says which setting keeps unprivileged user namespaces off,
// when one of the usual ones does.
func namespaceHint() string {
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b))
	}
	switch {
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are off (enable them with sysctl kernel.unprivileged_userns_clone=1)"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=0 lifts it, or give ink an AppArmor profile that allows userns)"
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "user namespaces are off (sysctl user.max_user_namespaces is 0)"
	}
	return "a container's seccomp profile may forbid them"
}

// mountNamespaceID identifies the calling thread's mount namespace.
func mountNamespaceID() (string, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/mnt", &st); err != nil {
		return "", fmt.Errorf("mount namespace: %w", err)
	}
	return strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10), nil
}

// mountReadOnly mounts each path read-only over itself, with everything
// mounted below it. It refuses to run in the mount namespace host (the
// parent's), where the mounts would change the user's own view of the
// files; it first makes every mount a slave, so that nothing it mounts
// reaches any other namespace.
func mountReadOnly(paths []string, host string) error {
	self, err := mountNamespaceID()
	if err != nil {
		return err
	}
	if host == "" || self == host {
		return errors.New("not in a private mount namespace; ink starts this step in one")
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("read-only path %q is not absolute", p)
		}
		if err := bindReadOnly(p); err != nil {
			return fmt.Errorf("mount %s read-only: %w", p, err)
		}
	}
	return nil
}

// bindReadOnly mounts path (a directory or a file, not a symbolic link)
// read-only over itself.
func bindReadOnly(path string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return err
	}
	return unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// probeReadOnly checks, in the probe, that dir (mounted read-only) takes
// no write.
func probeReadOnly(dir string) error {
	f, err := os.CreateTemp(dir, "write-")
	if err == nil {
		f.Close()
		os.Remove(f.Name())
		return errors.New("the read-only mount took a write")
	}
	if !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("a write to the read-only mount failed with %v, not EROFS", err)
	}
	return nil
}
