//go:build linux

package shm

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestSegmentMappedInThisProcess(t *testing.T) {
	s, err := New(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, v := range s.Data {
		if v != 0 {
			t.Fatalf("new segment element %d = %v, want 0", i, v)
		}
		s.Data[i] = float64(i)
	}
	if s.Refs() != 1 {
		t.Fatalf("new segment has %d references, want 1", s.Refs())
	}
	s.Hold()
	m, err := Map(s.Desc())
	if err != nil {
		t.Fatal(err)
	}
	if &m.Data[0] == &s.Data[0] {
		t.Fatal("Map returned the owner's mapping, want a mapping of its own")
	}
	for i, v := range m.Data {
		if v != float64(i) {
			t.Fatalf("mapped element %d = %v, want %d", i, v, i)
		}
	}
	s.Data[7] = -1
	if m.Data[7] != -1 {
		t.Fatalf("mapped element 7 = %v after the owner wrote -1", m.Data[7])
	}
	if left := m.Drop(); left != 1 || s.Refs() != 1 {
		t.Fatalf("after the borrower's drop: %d references (owner sees %d), want 1", left, s.Refs())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Data[7] != -1 {
		t.Fatal("the owner's data changed when a borrower unmapped")
	}
}

func TestMapRefusesAStaleDesc(t *testing.T) {
	s, err := New(10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []Desc{
		{PID: s.desc.PID, FD: s.desc.FD, Ino: s.desc.Ino + 1, N: 10}, // another file
		{PID: s.desc.PID, FD: s.desc.FD, Ino: s.desc.Ino, N: 11},     // another size
		{PID: s.desc.PID, FD: 1 << 20, Ino: s.desc.Ino, N: 10},       // no such descriptor
		{PID: s.desc.PID, FD: s.desc.FD, Ino: s.desc.Ino, N: 0},      // nothing
	} {
		if m, err := Map(d); err == nil {
			m.Close()
			t.Errorf("Map(%v) succeeded, want an error", d)
		} else if !strings.Contains(err.Error(), "segment") && !strings.Contains(err.Error(), "fd") {
			t.Errorf("Map(%v): %v does not name the segment", d, err)
		}
	}
}

// TestSegmentAcrossProcesses maps a segment in a child process (this test
// binary again), which checks the elements and drops the reference it
// was lent.
func TestSegmentAcrossProcesses(t *testing.T) {
	if d := os.Getenv("SHM_TEST_DESC"); d != "" {
		childMapsAndDrops(d)
		return
	}
	s, err := New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range s.Data {
		s.Data[i] = float64(i % 1000)
	}
	s.Hold()
	desc, _ := json.Marshal(s.Desc())
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSegmentAcrossProcesses$")
	cmd.Env = append(os.Environ(), "SHM_TEST_DESC="+string(desc), "SHM_TEST_NODE="+Node())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "child: sum ok") {
		t.Fatalf("child did not check the elements:\n%s", out)
	}
	if s.Refs() != 1 {
		t.Fatalf("after the child's drop the segment has %d references, want 1", s.Refs())
	}
}

func childMapsAndDrops(desc string) {
	var d Desc
	if err := json.Unmarshal([]byte(desc), &d); err != nil {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	if n := Node(); n == "" || n != os.Getenv("SHM_TEST_NODE") {
		fmt.Printf("child: node %q, parent's %q\n", n, os.Getenv("SHM_TEST_NODE"))
		os.Exit(1)
	}
	m, err := Map(d)
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	var sum, want float64
	for i, v := range m.Data {
		sum += v
		want += float64(i % 1000)
	}
	if sum != want {
		fmt.Printf("child: sum %v, want %v\n", sum, want)
		os.Exit(1)
	}
	m.Drop()
	m.Close()
	fmt.Println("child: sum ok")
}

// TestSegmentIsSealedAtItsSize: no process that maps a segment can shrink
// it under the others.
func TestSegmentIsSealedAtItsSize(t *testing.T) {
	s, err := New(100)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", s.Desc().FD), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(HeaderBytes); err == nil {
		t.Fatal("a segment was shrunk")
	}
	if st, err := f.Stat(); err != nil || st.Size() != HeaderBytes+800 {
		t.Fatalf("segment size %v, %v; want %d", st.Size(), err, HeaderBytes+800)
	}
}
