package npy

import (
	"bytes"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNumPyFiles has NumPy save arrays and reads their headers and data
// here, and the other way round.
func TestNumPyFiles(t *testing.T) {
	py := jobtest.Python(t, "numpy")
	dir := t.TempDir()
	script := `
import sys, numpy as np
d = sys.argv[1]
np.save(d + '/f.npy', np.arange(12, dtype='<f8').reshape(3, 4) / 4)
np.save(d + '/i.npy', np.arange(5, dtype='<i8') - 2)
np.save(d + '/c.npy', np.zeros((2, 3, 4)))
np.save(d + '/fortran.npy', np.asfortranarray(np.ones((3, 4))))
np.save(d + '/big.npy', np.ones(3, dtype='>f8'))
np.save(d + '/f4.npy', np.ones(3, dtype='<f4'))
np.save(d + '/scalar.npy', np.float64(3))
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, c := range []struct {
		file, descr, shape string
		first, last        float64
	}{
		{"f.npy", Float64, "[3 4]", 0, 2.75},
		{"i.npy", Int64, "[5]", -2, 2},
		{"c.npy", Float64, "[2 3 4]", 0, 0},
	} {
		f, _ := os.Open(filepath.Join(dir, c.file))
		h, err := ReadHeader(c.file, f)
		if err != nil {
			t.Fatal(err)
		}
		if h.Descr != c.descr || fmt.Sprint(h.Shape) != c.shape {
			t.Errorf("%s: %+v, want %s %s", c.file, h, c.descr, c.shape)
		}
		st, _ := f.Stat()
		raw := make([]byte, st.Size()-h.DataOffset)
		f.ReadAt(raw, h.DataOffset)
		vals := make([]float64, len(raw)/8)
		Decode(h.Descr, raw, vals)
		if vals[0] != c.first || vals[len(vals)-1] != c.last {
			t.Errorf("%s: data %v, want first %g and last %g", c.file, vals, c.first, c.last)
		}
		f.Close()
	}
	for file, want := range map[string]string{
		"fortran.npy": "fortran_order True: want a C-order",
		"big.npy":     `dtype ">f8" is big-endian`,
		"f4.npy":      `dtype "<f4": want "<f8" or "<i8"`,
		"scalar.npy":  "shape []: want 1 to 3 dimensions",
	} {
		f, _ := os.Open(filepath.Join(dir, file))
		_, err := ReadHeader(file, f)
		f.Close()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v, want an error naming the file and %q", file, err, want)
		}
	}

	// Written here, read by NumPy.
	for _, c := range []struct {
		descr string
		shape []int
	}{{Float64, []int{2, 3}}, {Int64, []int{7}}, {Float64, []int{2, 1, 2}}} {
		hdr, err := EncodeHeader(c.descr, c.shape)
		if err != nil {
			t.Fatal(err)
		}
		if len(hdr)%64 != 0 {
			t.Errorf("header of %d bytes: want a multiple of 64", len(hdr))
		}
		n := 1
		for _, s := range c.shape {
			n *= s
		}
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i) - 1
		}
		data, err := Encode(c.descr, vals, hdr)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "go.npy")
		os.WriteFile(p, data, 0o644)
		check := `
import sys, numpy as np
a = np.load(sys.argv[1])
assert a.dtype == np.dtype(sys.argv[2]) and list(a.shape) == eval(sys.argv[3]), (a.dtype, a.shape)
assert (a.ravel() == np.arange(a.size) - 1).all(), a
print('ok')
`
		if out, err := exec.Command(py, "-c", check, p, c.descr, pyList(c.shape)).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("ok")) {
			t.Errorf("numpy reading %s %v: %v\n%s", c.descr, c.shape, err, out)
		}
		f, _ := os.Open(p)
		h, err := ReadHeader("go.npy", f)
		f.Close()
		if err != nil || fmt.Sprint(h.Shape) != fmt.Sprint(c.shape) {
			t.Errorf("own header %v: %+v, %v", c.shape, h, err)
		}
	}
	if _, err := Encode(Int64, []float64{0.5}, nil); err == nil {
		t.Error("0.5 as <i8: no error")
	}
}

// pyList prints a shape as a Python list.
func pyList(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
