// Package hugepage allocates the large []float64 buffers of the system —
// the tiles of distributed arrays and the bulk chunks of parcels — so that
// Linux can back them with transparent huge pages.
//
// On Linux with transparent huge pages in "madvise" mode (the setting of
// the machine in docs/benchmarks.md, and of many distributions), Go's heap
// gets 4 KiB pages only: a fresh 32 MiB tile costs 8192 page faults on its
// first write, each a trip into the kernel that costs microseconds on a
// virtual machine. NumPy advises the kernel to use 2 MiB pages for every
// array of 4 MiB or more; Float64s does the same for Tessera's buffers, so
// the same tile costs 16 faults. Smaller buffers, other systems, and
// kernels without transparent huge pages get plain Go memory.
package hugepage
