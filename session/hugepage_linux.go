package session

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the machines ink
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the 2 MiB-aligned part of b, fresh
// memory not yet touched, with transparent huge pages, where the system
// allows them (madvise mode): a fresh process then takes one page fault
// for each 2 MiB it writes instead of 512. Where it cannot, nothing
// changes.
func adviseHuge(b []byte) {
	if cap(b) < hugePage {
		return
	}
	b = b[:cap(b)]
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(len(b))) &^ (hugePage - 1)
	if end <= start {
		return
	}
	_ = unix.Madvise(b[start-p:end-p], unix.MADV_HUGEPAGE) // a hint: where refused, 4 KiB pages serve
}
