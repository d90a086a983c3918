package sandbox

import (
	"fmt"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// MinABI is the lowest Landlock ABI version the sandbox runs on (Linux 6.2
// and newer). Version 1 forbids moving a file between directories even
// inside a writable directory, which breaks git and most build tools, and
// version 2 cannot stop truncate(2) of files outside the writable
// directories; from version 3 on every way of writing a file is covered.
// Newer versions add protection where the kernel has it: ioctl on devices
// (5) and signals to processes outside the sandbox (6).
const MinABI = 3

// UnavailableError says why this machine cannot run the sandbox.
type UnavailableError struct {
	// Kernel is the running kernel's release, e.g. "5.15.0-91-generic".
	Kernel string
	// ABI is the Landlock ABI version the kernel offers; 0 when it has
	// no Landlock at all.
	ABI int
	// Cause is why the kernel reported no Landlock, when it said why.
	Cause error
}

func (e *UnavailableError) Error() string {
	if e.ABI <= 0 {
		return fmt.Sprintf("Landlock is not available: Linux %s was built without it or started with it disabled "+
			"(it must be enabled in the kernel configuration and listed in the lsm= boot parameter)", e.Kernel)
	}
	return fmt.Sprintf("Landlock is too old: Linux %s offers Landlock ABI %d, and the bash sandbox needs ABI %d (Linux 6.2 or newer)",
		e.Kernel, e.ABI, MinABI)
}

func (e *UnavailableError) Unwrap() error { return e.Cause }

// abiVersion reports the kernel's Landlock ABI version: 0 and the
// kernel's error where it has none.
func abiVersion() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, err
	}
	return v, nil
}

// ABI returns the Landlock ABI version the sandbox gets from the running
// kernel, 0 where it has none (for diagnostics such as `ink doctor`; Check
// decides). A kernel that reports ABI 6 or newer without the fix for its
// signal-scoping bug counts as 5, as go-landlock treats it.
func ABI() int {
	v, _ := abiVersion()
	if v >= 6 {
		if errata, err := llsys.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			return 5
		}
	}
	return v
}

// Check reports whether the kernel can enforce the sandbox: nil, or an
// *UnavailableError that says why not (kernel release, ABI version). It
// asks the kernel each time (one system call) and is safe for concurrent
// use.
func Check() error {
	v, err := abiVersion()
	if v >= MinABI {
		return nil
	}
	return &UnavailableError{Kernel: kernelRelease(), ABI: v, Cause: err}
}

// kernelRelease is the running kernel's release string, or "(unknown
// version)".
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "(unknown version)"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Decision is how bash really runs for a requested mode on this machine.
type Decision struct {
	// Requested is the mode that was asked for (or defaulted to).
	Requested Mode
	// Effective is the mode bash runs under: Requested, or
	// DangerFullAccess where the kernel cannot enforce Requested.
	Effective Mode
	// Warning is non-empty when the sandbox was dropped: show it to the
	// user once (per run), not once per command.
	Warning string
}

// Decide settles the mode bash runs under. requested is the mode asked for
// or defaulted to; explicit says the user named it (a flag or a profile's
// sandbox: field); available is what Check returned. A confined mode on a
// machine without Landlock is dropped with a warning when it was a
// default, and refused with an error saying why and what to do when it was
// asked for explicitly. A requested mode that is not a mode is an error.
func Decide(requested Mode, explicit bool, available error) (Decision, error) {
	if _, err := requested.MarshalText(); err != nil {
		return Decision{}, err
	}
	d := Decision{Requested: requested, Effective: requested}
	if !requested.Confined() || available == nil {
		return d, nil
	}
	if explicit {
		return Decision{}, fmt.Errorf("cannot run bash in the %s sandbox: %v; "+
			"run ink on a kernel with Landlock, or pick --sandbox %s to run bash unconfined",
			requested, available, DangerFullAccess)
	}
	d.Effective = DangerFullAccess
	d.Warning = fmt.Sprintf("%v; bash runs without a sandbox (the %s default is dropped; pick --sandbox %s to accept that without this warning)",
		available, requested, DangerFullAccess)
	return d, nil
}
