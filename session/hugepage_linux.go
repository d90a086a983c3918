package session

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the machines ink
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// hugeBuffer returns an empty buffer of capacity n whose pages the kernel
// is asked to back with transparent huge pages, where the system allows
// them (madvise mode): a fresh process then takes one page fault for each
// 2 MiB it writes there instead of 512, and on a virtual machine a page
// fault costs microseconds. A buffer of 1 MiB or less is a plain one. A
// larger one starts at a 2 MiB boundary, so that all of it may be backed
// so; the memory it skips to get there is never touched. Where the kernel
// refuses, 4 KiB pages serve as before.
func hugeBuffer(n int) []byte {
	if n <= hugePage/2 {
		return make([]byte, 0, n)
	}
	b := make([]byte, n+hugePage)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	off := int((p+hugePage-1)&^(hugePage-1) - p)
	end := off + (n+hugePage-1)&^(hugePage-1)
	if end > len(b) {
		end = off + n&^(hugePage-1)
	}
	if end > off {
		_ = unix.Madvise(b[off:end], unix.MADV_HUGEPAGE) // a hint only
	}
	return b[off : off : off+n]
}
