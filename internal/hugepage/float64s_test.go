package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

func TestFloat64sIsZeroedMemoryOfTheLength(t *testing.T) {
	for _, n := range []int{0, 1, 1000, MinBytes/8 - 1, MinBytes / 8, MinBytes/8 + 12345} {
		b := Float64s(n)
		if len(b) != n {
			t.Fatalf("Float64s(%d) has length %d", n, len(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("Float64s(%d)[%d] = %v, want 0", n, i, v)
			}
		}
		for i := range b {
			b[i] = float64(i)
		}
	}
}

// TestFloat64sAdvisesHugePages reads the kernel's view of a buffer of
// Float64s: the mapping holding its 2 MiB pages must carry the
// MADV_HUGEPAGE advice ("hg" in /proc/self/smaps's VmFlags).
func TestFloat64sAdvisesHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skipf("no transparent huge pages on this system (%v): Float64s gives plain memory", err)
	}
	if strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are disabled (%s): the advice has no effect", strings.TrimSpace(string(mode)))
	}
	b := Float64s(3 * pageBytes / 8)
	addr := uintptr(unsafe.Pointer(&b[0]))
	inner := (addr + pageBytes - 1) &^ (pageBytes - 1) // the first whole 2 MiB page
	flags, err := vmFlags(inner)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("the mapping of a %d-byte buffer of Float64s has VmFlags %q, want the MADV_HUGEPAGE flag hg", len(b)*8, flags)
	}
	for i := range b {
		b[i] = 1 // the first write faults the memory in, in 2 MiB pages where the kernel can
	}
}

// vmFlags returns the VmFlags line of the mapping holding addr in
// /proc/self/smaps.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping of /proc/self/smaps holds %#x", addr)
}
