//go:build linux

package primitives

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// alignedBytes returns n bytes starting on a page boundary.
func alignedBytes(n int) []byte {
	b := make([]byte, n+directAlign)
	off := (directAlign - int(uintptr(unsafe.Pointer(&b[0]))%directAlign)) % directAlign
	return b[off : off+n]
}

// TestReadDirect reads a chunk file evicted from the page cache straight
// into page-aligned memory, and the same file through the cache once it
// is cached, unaligned memory or an unaligned length: the same bytes each
// way, and O_DIRECT only for the evicted file into aligned memory (where
// the file system takes O_DIRECT).
func TestReadDirect(t *testing.T) {
	const n = 64 << 10
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	name := filepath.Join(t.TempDir(), "0.0")
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatal(err)
	}
	evict := func() bool {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Sync()
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		var st unix.Cachestat_t
		err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: n}, &st, 0)
		return err == nil && st.Cache == 0
	}
	read := func(dst []byte) bool {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ok, err := readDirect(f, dst)
		if err != nil {
			t.Fatalf("readDirect: %v", err)
		}
		if !ok {
			if err := readRaw(name, dst, false); err != nil {
				t.Fatalf("readRaw: %v", err)
			}
		}
		if !bytes.Equal(dst, want[:len(dst)]) {
			t.Fatalf("read %d bytes (direct %v): not the bytes written", len(dst), ok)
		}
		return ok
	}
	evicted := evict()
	direct := read(alignedBytes(n))
	if evicted {
		d, err := os.OpenFile(name, os.O_RDONLY|unix.O_DIRECT, 0)
		supported := err == nil
		if d != nil {
			d.Close()
		}
		if supported && !direct {
			t.Error("a file evicted from the page cache was not read with O_DIRECT")
		}
	}
	if _, err := os.ReadFile(name); err != nil { // into the page cache
		t.Fatal(err)
	}
	if read(alignedBytes(n)) {
		t.Error("a cached file was read with O_DIRECT")
	}
	evict()
	if read(alignedBytes(n + 8)[8:]) {
		t.Error("unaligned memory was read into with O_DIRECT")
	}
}
