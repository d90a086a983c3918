package sandbox

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestCompatFilter runs the filter for 32-bit calls in a BPF interpreter:
// it denies the listed calls made in the compat architecture (socketcall
// included, whose arguments no filter can read), and lets every native
// call and every other compat call through to the first filter.
func TestCompatFilter(t *testing.T) {
	t.Parallel()
	names := append(append([]string{}, deniedEverywhere...), deniedOffline...)
	names = append(names, "socket", "socketpair", "socketcall")
	prog, err := compatProgram(arch.I386, names)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	// The interpreter loads words big-endian, the kernel in the
	// machine's order; the data is laid out for the interpreter.
	data := func(nr int, a arch.AuditArch) []byte {
		b := make([]byte, 64)
		binary.BigEndian.PutUint32(b[0:], uint32(nr))
		binary.BigEndian.PutUint32(b[4:], uint32(a))
		return b
	}
	deny := int(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	allow := int(unix.SECCOMP_RET_ALLOW)
	for _, tc := range []struct {
		name string
		nr   int
		arch arch.AuditArch
		want int
	}{
		{"i386 socketcall", arch.I386.SyscallNames["socketcall"], arch.I386.ID, deny},
		{"i386 socket", arch.I386.SyscallNames["socket"], arch.I386.ID, deny},
		{"i386 io_uring_setup", arch.I386.SyscallNames["io_uring_setup"], arch.I386.ID, deny},
		{"i386 open_by_handle_at", arch.I386.SyscallNames["open_by_handle_at"], arch.I386.ID, deny},
		{"i386 write", arch.I386.SyscallNames["write"], arch.I386.ID, allow},
		{"x86_64 with i386's socketcall number", arch.I386.SyscallNames["socketcall"], arch.X86_64.ID, allow},
		{"x86_64 socket (the first filter's)", arch.X86_64.SyscallNames["socket"], arch.X86_64.ID, allow},
	} {
		got, err := vm.Run(data(tc.nr, tc.arch))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: filter returned %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
