package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// exitCannotRun is Main's exit code when it cannot apply the policy or
// start the program: 126, as a shell says "found but cannot run".
const exitCannotRun = 126

// devices are the character devices commands keep using for reading and
// writing, with their ioctls, under every confined mode: the null and
// random devices, and terminals (a command with a pseudo-terminal needs
// /dev/ptmx and its /dev/pts entry). Missing ones are skipped.
var devices = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts",
}

// sharedMemory is where POSIX shared memory and semaphores live (Python's
// multiprocessing needs them); it stays writable in every confined mode.
const sharedMemory = "/dev/shm"

// config is the Landlock configuration the sandbox enforces: every file
// system right up to ABI 5 (reading, writing, creating, removing, moving
// and truncating files, ioctl on devices) and, from ABI 6, signals to
// processes outside the sandbox. It leaves out on purpose connecting to
// Unix sockets by path (ABI 9), which is not a write to the file system,
// and abstract Unix sockets. BestEffort drops what an older kernel lacks;
// Main refuses kernels below MinABI itself.
var config = landlock.MustConfig(landlock.V5.HandledAccessFS, landlock.ScopedSet(llsys.ScopeSignal)).BestEffort()

// offlineConfig is config that also handles every network right Landlock
// has — TCP connect and bind (ABI 4), UDP (ABI 10) — and grants none, for
// a command without the network.
var offlineConfig = func() landlock.Config {
	c := config
	c.HandledAccessNet = landlock.V11.HandledAccessNet
	return c
}()

// Main runs the hidden Command: args are the words after it on the command
// line, as Wrap wrote them. It marks every inherited descriptor above 2
// close-on-exec, mounts the read-only paths (in the private mount
// namespace it was started in), restricts the process with Landlock (read
// and execute everywhere; write only the given directories, the devices
// and shared memory; no TCP without the network), sets no_new_privs,
// installs the seccomp filter (no sockets but Unix ones without the
// network; no open_by_handle_at), and executes the program in its place,
// so Main returns only by exiting: with code 126, after reporting why on
// the status pipe (or on stderr when there is none), when the policy
// cannot be applied or the program cannot be started. It never runs the
// program unconfined.
func Main(args []string) {
	// The restriction is applied to this OS thread only, and this thread
	// executes the program: it must not change threads in between.
	runtime.LockOSThread()
	CloseInherited()
	req, err := parseArgs(args)
	if err == nil && len(req.readOnly) > 0 {
		err = mountReadOnly(req.readOnly, req.hostMntNS)
	}
	if req.probe {
		if err == nil {
			err = probeReadOnly(req.readOnly[0])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if err == nil {
		err = restrict(req.writable, req.network)
	}
	if err == nil {
		err = filterSyscalls(req.network)
	}
	msg := fmt.Sprintf("the %s sandbox could not be applied: %v", req.modeName(), err)
	if err == nil {
		err = syscall.Exec(req.path, req.argv, os.Environ())
		msg = fmt.Sprintf("cannot run %s in the %s sandbox: %v", req.argv[0], req.modeName(), err)
	}
	var out io.Writer = os.Stderr
	if req.status != nil {
		out = req.status
	}
	fmt.Fprintln(out, msg)
	os.Exit(exitCannotRun)
}

// request is one parsed command line of Main.
type request struct {
	mode      string
	status    *os.File // the status pipe, or nil
	path      string   // the program to execute
	writable  []string
	network   bool     // the program may reach the network
	readOnly  []string // paths to mount read-only
	hostMntNS string   // the mount namespace the mounts must not happen in
	probe     bool     // only mount readOnly[0] and check it takes no write
	argv      []string
}

func (r request) modeName() string {
	if r.mode == "" {
		return "bash"
	}
	return r.mode
}

// parseArgs reads Main's command line. It marks the status pipe
// close-on-exec first thing, so the program never inherits it and its
// closing tells the parent that the program started.
func parseArgs(args []string) (request, error) {
	var req request
	var statusFD int
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&req.mode, "mode", "", "the mode, for messages")
	fs.IntVar(&statusFD, "status-fd", -1, "where to report a failure")
	fs.StringVar(&req.path, "path", "", "the program to execute")
	fs.Func("write", "a writable directory (repeatable)", func(s string) error {
		req.writable = append(req.writable, s)
		return nil
	})
	fs.BoolVar(&req.network, "network", false, "let the program reach the network")
	fs.Func("ro", "a path to mount read-only (repeatable)", func(s string) error {
		req.readOnly = append(req.readOnly, s)
		return nil
	})
	fs.StringVar(&req.hostMntNS, "host-mntns", "", "the parent's mount namespace")
	fs.BoolVar(&req.probe, "probe", false, "check that read-only mounts work, and exit")
	err := fs.Parse(args)
	if statusFD >= 0 {
		if _, cerr := unix.FcntlInt(uintptr(statusFD), unix.F_SETFD, unix.FD_CLOEXEC); cerr == nil {
			req.status = os.NewFile(uintptr(statusFD), "status")
		}
	}
	if err != nil {
		return req, fmt.Errorf("bad command line (%v); `ink %s` is started by ink itself", err, Command)
	}
	req.argv = fs.Args()
	if req.probe {
		if len(req.readOnly) != 1 {
			return req, errors.New("-probe needs one -ro directory")
		}
		return req, nil
	}
	if len(req.argv) == 0 {
		return req, fmt.Errorf("no program to run; usage: ink %s [-path PROGRAM] -write DIR [-write DIR]... -- PROGRAM ARGS...", Command)
	}
	if req.path == "" {
		path, err := exec.LookPath(req.argv[0])
		if err != nil {
			return req, fmt.Errorf("cannot run %s: %w", req.argv[0], err)
		}
		req.path = path
	}
	if !filepath.IsAbs(req.path) {
		return req, fmt.Errorf("the program %q is not an absolute path", req.path)
	}
	if len(req.writable) == 0 {
		return req, errors.New("no writable directory given (at least the private temp dir is needed)")
	}
	for _, d := range req.writable {
		if !filepath.IsAbs(d) {
			return req, fmt.Errorf("writable directory %q is not an absolute path", d)
		}
	}
	return req, nil
}

// restrict applies the policy to the calling thread, which must be locked
// to its goroutine and must not run anything but the program afterwards.
func restrict(writable []string, network bool) error {
	if err := Check(); err != nil {
		return err
	}
	for _, d := range writable {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("writable directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("writable directory %s is not a directory", d)
		}
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(sharedMemory).IgnoreIfMissing(),
		landlock.RWDirs(writable...).WithRefer(),
	}
	cfg := offlineConfig
	if network {
		cfg = config
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("Landlock rules: %w", err)
	}
	if fd < 0 {
		return errors.New("Landlock enforced nothing on this kernel")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		if errors.Is(err, syscall.E2BIG) {
			return errors.New("too many nested sandboxes (Landlock allows 16); run ink outside this sandbox")
		}
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
