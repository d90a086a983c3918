package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// NetABI is the lowest Landlock ABI version that confines TCP (connect
// and bind); ABI 10 adds UDP. Below it the network is cut by the seccomp
// filter alone.
const NetABI = 4

// NetworkUnavailableError says why this machine cannot cut bash off the
// network: the kernel takes no seccomp filter.
type NetworkUnavailableError struct {
	// Kernel is the running kernel's release.
	Kernel string
}

func (e *NetworkUnavailableError) Error() string {
	return fmt.Sprintf("the network cannot be cut off: Linux %s takes no seccomp filter (it must be built with CONFIG_SECCOMP_FILTER)", e.Kernel)
}

// CheckNetwork reports whether the kernel can cut sandboxed commands off
// the network: nil, or a *NetworkUnavailableError. The seccomp filter is
// what does it; Landlock (ABI 4 and newer) adds a second layer for TCP
// where the kernel has it (see NetABI).
func CheckNetwork() error {
	if seccomp.Supported() {
		return nil
	}
	return &NetworkUnavailableError{Kernel: kernelRelease()}
}

// NetworkDecision is whether bash reaches the network, settled for one
// agent on this machine.
type NetworkDecision struct {
	// Allowed says commands may use the network: asked for (--network, a
	// profile's network: true), or nothing confines them
	// (danger-full-access, or the sandbox was dropped).
	Allowed bool
	// Warning is non-empty when the network was to be cut and cannot be:
	// show it once per run.
	Warning string
}

// DecideNetwork settles whether bash reaches the network under the mode
// decision d. allow says the network was granted; explicit says the user
// asked for it to be cut by name (a confined mode named on the command
// line or in a profile, --network=false, network: false); available is
// what CheckNetwork returned. Like Decide, it drops a defaulted cut with
// a warning where the kernel cannot enforce it, and refuses an explicit
// one with a message that says what to do.
func DecideNetwork(d Decision, allow, explicit bool, available error) (NetworkDecision, error) {
	if allow || !d.Effective.Confined() {
		return NetworkDecision{Allowed: true}, nil
	}
	if available == nil {
		return NetworkDecision{}, nil
	}
	if explicit {
		return NetworkDecision{}, fmt.Errorf("cannot run bash without the network in the %s sandbox: %v; "+
			"run ink on such a kernel, or pass --network to let bash reach the network", d.Effective, available)
	}
	return NetworkDecision{Allowed: true, Warning: fmt.Sprintf("%v; bash may reach the network (pass --network to accept that without this warning)", available)}, nil
}

// deniedEverywhere are the system calls a confined command never gets:
// open_by_handle_at opens a file by its handle through any mount of its
// file system, around both the read-only git mounts and Landlock's path
// rules (it needs CAP_DAC_READ_SEARCH, so this matters when ink runs as
// root).
var deniedEverywhere = []string{"open_by_handle_at"}

// deniedOffline are the system calls denied without the network besides
// socket(2) and socketpair(2) of every family but AF_UNIX: io_uring can
// create and connect sockets without a system call seccomp sees.
var deniedOffline = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// filterSyscalls installs the sandbox's seccomp filter on the calling
// thread (which must have no_new_privs set and execute the program
// next): open_by_handle_at always, and without the network every socket
// that is not a Unix socket and io_uring, as Codex does. The 32-bit
// system calls a 64-bit kernel also takes (i386 on x86-64, arm on arm64)
// get a second filter with the same denials, so a 32-bit program cannot
// go around the first; its socketcall(2) multiplexer is denied whole,
// since its arguments are out of a filter's reach.
func filterSyscalls(network bool) error {
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedEverywhere}},
	}
	if !network {
		g := &policy.Syscalls[0]
		g.Names = append(append([]string(nil), deniedEverywhere...), deniedOffline...)
		notUnix := []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}
		g.NamesWithCondtions = []seccomp.NameWithConditions{
			{Name: "socket", Conditions: notUnix},
			{Name: "socketpair", Conditions: notUnix},
		}
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: policy}); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	compat, ok := compatArch()
	if !ok {
		return nil
	}
	names := append([]string(nil), deniedEverywhere...)
	if !network {
		names = append(names, deniedOffline...)
		names = append(names, "socket", "socketpair", "socketcall")
	}
	prog, err := compatProgram(compat, names)
	if err == nil {
		var raw []bpf.RawInstruction
		if raw, err = bpf.Assemble(prog); err == nil {
			err = loadRaw(raw)
		}
	}
	if err != nil {
		return fmt.Errorf("seccomp (32-bit calls): %w", err)
	}
	return nil
}

// compatArch is the 32-bit architecture whose system calls the running
// 64-bit kernel also takes, if any.
func compatArch() (*arch.Info, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return arch.I386, true
	case "arm64":
		return arch.ARM, true
	}
	return nil, false
}

// compatProgram is a filter that denies names (with EPERM) to calls made
// in the compat architecture and lets every other call through (the
// first filter judges those).
func compatProgram(compat *arch.Info, names []string) ([]bpf.Instruction, error) {
	var nums []uint32
	for _, n := range names {
		if nr, ok := compat.SyscallNames[n]; ok {
			nums = append(nums, uint32(nr))
		}
	}
	if len(nums) == 0 {
		return nil, errors.New("no system call to deny")
	}
	const (
		offArch = 4 // struct seccomp_data: nr (4 bytes), arch (4 bytes), ...
		offNr   = 0
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	// ld arch; jne compat -> allow; ld nr; jeq n_i -> deny ...; allow; deny
	n := len(nums)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(compat.ID), SkipTrue: uint8(n + 1)},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	for i, nr := range nums {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(n - i)})
	}
	prog = append(prog, bpf.RetConstant{Val: allow}, bpf.RetConstant{Val: deny})
	return prog, nil
}

// loadRaw installs an assembled filter on the calling thread.
func loadRaw(raw []bpf.RawInstruction) error {
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return errno
	}
	return nil
}
