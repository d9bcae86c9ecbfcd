package zarr

import (
	"encoding/binary"
	"github.com/tessera-amt/tessera/internal/jobtest"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func values(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(i)) * float64(i%17)
	}
	return v
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	var c Codec
	for _, comp := range []*Compressor{nil, {ID: "zlib", Level: 1}, {ID: "gzip", Level: 5}, {ID: "zstd", Level: 3}} {
		for _, dtype := range []string{Float64, Int64} {
			m := Meta{Shape: []int{5, 7}, Chunks: []int{3, 4}, Dtype: dtype, Compressor: comp}
			vals := values(12)
			if dtype == Int64 {
				for i := range vals {
					vals[i] = math.Round(vals[i] * 1000)
				}
			}
			enc, err := c.Encode(m, vals)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Decode(m, enc)
			if err != nil {
				t.Fatalf("%v %s: %v", comp, dtype, err)
			}
			for i := range vals {
				if got[i] != vals[i] {
					t.Fatalf("%v %s: element %d is %g, want %g", comp, dtype, i, got[i], vals[i])
				}
			}
			// Corrupt data is an error, never a wrong chunk.
			if comp != nil {
				bad := append([]byte(nil), enc...)
				for i := len(bad) / 3; i < len(bad); i++ {
					bad[i] ^= 0x5a
				}
				if _, err := c.Decode(m, bad); err == nil || !strings.Contains(err.Error(), "corrupt") {
					t.Errorf("%s chunk with flipped bytes: %v, want a corrupt-chunk error", comp.ID, err)
				}
			}
		}
	}
	if _, err := c.Encode(Meta{Chunks: []int{2}, Dtype: Int64}, []float64{1, 2.5}); err == nil || !strings.Contains(err.Error(), "want an integer") {
		t.Errorf("2.5 as <i8: %v", err)
	}
}

func TestParseMetaRejects(t *testing.T) {
	base := `{"zarr_format": 2, "shape": [4, 3], "chunks": [2, 3], "dtype": "<f8", "compressor": null, "fill_value": 0.0, "order": "C", "filters": null}`
	if m, err := ParseMeta("a.zarr", []byte(base)); err != nil || m.Key([]int{1, 0}) != "1.0" || m.Grid()[0] != 2 {
		t.Fatalf("ParseMeta: %+v, %v", m, err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"<f8"`, `"<f4"`, `dtype "<f4": want "<f8" or "<i8"`},
		{`"<f8"`, `">f8"`, `dtype ">f8"`},
		{`"C"`, `"F"`, `order "F": want "C"`},
		{`"filters": null`, `"filters": [{"id": "delta"}]`, "filters"},
		{`"compressor": null`, `"compressor": {"id": "lzma"}`, `compressor "lzma"`},
		{`"compressor": null`, `"compressor": {"id": "blosc", "cname": "snappy"}`, `blosc compressor "snappy"`},
		{`"zarr_format": 2`, `"zarr_format": 3`, "zarr_format 3: want 2"},
		{`"chunks": [2, 3]`, `"chunks": [100000, 100000]`, "want at most 268435456 elements"},
		{`"fill_value": 0.0`, `"fill_value": "NaN"`, ""},
	} {
		_, err := ParseMeta("a.zarr", []byte(strings.Replace(base, c.from, c.to, 1)))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.to, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "a.zarr") {
			t.Errorf("%s: error %v, want one naming a.zarr and containing %q", c.to, err, c.want)
		}
	}
}

// TestPythonChunksDecode has Python zarr write arrays with its default
// compressor (Blosc, lz4, byte shuffle) and others, and decodes every
// chunk file here.
func TestPythonChunksDecode(t *testing.T) {
	py := jobtest.Python(t, "zarr", "numcodecs", "numpy")
	dir := t.TempDir()
	script := `
import sys, zarr, numcodecs, numpy as np
d = sys.argv[1]
x = np.sin(np.arange(37 * 23, dtype='<f8')).reshape(37, 23) * 1000
comps = {
  'default': zarr.storage.default_compressor,
  'noshuffle': numcodecs.Blosc(cname='lz4', clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE),
  'bzstd': numcodecs.Blosc(cname='zstd', clevel=3, shuffle=numcodecs.Blosc.SHUFFLE),
  'bzlib': numcodecs.Blosc(cname='zlib', clevel=3, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=256),
  'small': numcodecs.Blosc(cname='lz4', clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=200),
  'zlib': numcodecs.Zlib(level=1), 'gzip': numcodecs.GZip(level=1), 'zstd': numcodecs.Zstd(level=1), 'none': None}
for k, c in comps.items():
  z = zarr.open_array(d + '/' + k, mode='w', shape=x.shape, chunks=(10, 9), dtype='<f8', compressor=c)
  z[:] = x
z = zarr.open_array(d + '/int', mode='w', shape=(100,), chunks=(33,), dtype='<i8')
z[:] = np.arange(100) * 3 - 7
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var c Codec
	for _, name := range []string{"default", "noshuffle", "bzstd", "bzlib", "small", "zlib", "gzip", "zstd", "none", "int"} {
		meta, err := os.ReadFile(filepath.Join(dir, name, ".zarray"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMeta(name, meta)
		if err != nil {
			t.Fatal(err)
		}
		g := m.Grid()
		idx := make([]int, len(g))
		for {
			data, err := os.ReadFile(filepath.Join(dir, name, m.Key(idx)))
			if err != nil {
				t.Fatal(err)
			}
			vals, err := c.Decode(m, data)
			if err != nil {
				t.Fatalf("%s chunk %s: %v", name, m.Key(idx), err)
			}
			checkChunk(t, name, m, idx, vals)
			if !next(idx, g) {
				break
			}
		}
	}
}

func next(idx, g []int) bool {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < g[d] {
			return true
		}
		idx[d] = 0
	}
	return false
}

// checkChunk compares a decoded chunk with what the script wrote.
func checkChunk(t *testing.T, name string, m Meta, idx []int, vals []float64) {
	t.Helper()
	if name == "int" {
		for i := range m.Chunks[0] {
			g := idx[0]*m.Chunks[0] + i
			if g < m.Shape[0] && vals[i] != float64(g*3-7) {
				t.Fatalf("int chunk %v element %d: %g, want %d", idx, i, vals[i], g*3-7)
			}
		}
		return
	}
	for r := range m.Chunks[0] {
		for col := range m.Chunks[1] {
			gr, gc := idx[0]*m.Chunks[0]+r, idx[1]*m.Chunks[1]+col
			if gr >= m.Shape[0] || gc >= m.Shape[1] {
				continue
			}
			want := math.Sin(float64(gr*m.Shape[1]+gc)) * 1000
			if d := math.Abs(vals[r*m.Chunks[1]+col] - want); d > 1e-9 {
				t.Fatalf("%s chunk %v (%d, %d): %g, want %g", name, idx, gr, gc, vals[r*m.Chunks[1]+col], want)
			}
		}
	}
}

// TestPythonReadsGoChunks writes arrays here with every compressor and has
// Python zarr read them back.
func TestPythonReadsGoChunks(t *testing.T) {
	py := jobtest.Python(t, "zarr", "numcodecs", "numpy")
	dir := t.TempDir()
	var c Codec
	for _, comp := range []*Compressor{nil, {ID: "zlib", Level: 1}, {ID: "gzip", Level: 1}, {ID: "zstd", Level: 1}} {
		for _, dtype := range []string{Float64, Int64} {
			m := Meta{Shape: []int{11, 5}, Chunks: []int{4, 3}, Dtype: dtype, Compressor: comp}
			name := dtype[1:] + "-none"
			if comp != nil {
				name = dtype[1:] + "-" + comp.ID
			}
			p := filepath.Join(dir, name)
			os.MkdirAll(p, 0o755)
			meta, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(p, ".zarray"), meta, 0o644)
			g := m.Grid()
			idx := make([]int, 2)
			for {
				vals := make([]float64, m.ChunkElems())
				for r := range 4 {
					for col := range 3 {
						gr, gc := idx[0]*4+r, idx[1]*3+col
						if gr < 11 && gc < 5 {
							vals[r*3+col] = float64(gr*100 + gc)
						}
					}
				}
				data, err := c.Encode(m, vals)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(p, m.Key(idx)), data, 0o644)
				if !next(idx, g) {
					break
				}
			}
			script := `
import sys, zarr, numpy as np
z = zarr.open_array(sys.argv[1], mode='r')
want = (np.arange(11)[:, None] * 100 + np.arange(5)[None, :]).astype(z.dtype)
assert z.dtype == np.dtype(sys.argv[2]), z.dtype
assert (z[:] == want).all(), z[:]
print('ok')
`
			if out, err := exec.Command(py, "-c", script, p, dtype).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
				t.Errorf("python reading %s: %v\n%s", name, err, out)
			}
		}
	}
}

// TestBloscCorrupt feeds damaged Blosc frames to the decoder.
func TestBloscCorrupt(t *testing.T) {
	var c Codec
	m := Meta{Shape: []int{4}, Chunks: []int{4}, Dtype: Float64, Compressor: &Compressor{ID: "blosc", Cname: "lz4"}}
	frame := make([]byte, 16+32)
	frame[0], frame[1], frame[2], frame[3] = 2, 1, bloscMemcpyed, 8
	binary.LittleEndian.PutUint32(frame[4:], 32)
	binary.LittleEndian.PutUint32(frame[8:], 32)
	binary.LittleEndian.PutUint32(frame[12:], 48)
	binary.LittleEndian.PutUint64(frame[16:], math.Float64bits(2.5))
	if v, err := c.Decode(m, frame); err != nil || v[0] != 2.5 {
		t.Fatalf("stored frame: %v, %v", v, err)
	}
	for name, f := range map[string][]byte{
		"short":     frame[:10],
		"truncated": frame[:40],
		"wrong size": func() []byte {
			b := append([]byte(nil), frame...)
			binary.LittleEndian.PutUint32(b[4:], 64)
			return b
		}(),
		"bad block table": func() []byte {
			b := append([]byte(nil), frame...)
			b[2] = bloscShuffle | bloscLZ4<<5
			binary.LittleEndian.PutUint32(b[16:], 1000)
			return b
		}(),
	} {
		if _, err := c.Decode(m, f); err == nil || !strings.Contains(err.Error(), "corrupt blosc chunk") {
			t.Errorf("%s frame: %v, want a corrupt blosc chunk error", name, err)
		}
	}
}
