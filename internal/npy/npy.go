// Package npy is NumPy's .npy file format without the data: it parses and
// writes the header (magic, version, the dict of descr, fortran_order and
// shape) and converts little-endian float64 and int64 elements. Package
// primitives reads and writes the data, each locality its own rows.
package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Dtypes the package reads and writes.
const (
	Float64 = "<f8"
	Int64   = "<i8"
)

// Header is what a .npy header says: the dtype, the shape and where the
// data starts in the file (after the header's padding).
type Header struct {
	Descr       string
	Shape       []int
	DataOffset  int64
	Fortran     bool
	ElementSize int
}

var magic = []byte("\x93NUMPY")

// ReadHeader reads and checks the header of the .npy file r; name (the
// file) is in every error, which says what was expected and what was found.
// Only C-order "<f8" and "<i8" arrays of 1 to 3 dimensions are accepted.
func ReadHeader(name string, r io.ReaderAt) (Header, error) {
	bad := func(format string, args ...any) (Header, error) {
		return Header{}, fmt.Errorf("npy file %s: %s", name, fmt.Sprintf(format, args...))
	}
	pre := make([]byte, 12)
	if n, err := r.ReadAt(pre, 0); n < 10 {
		return bad("%d bytes, too short for a header (%v)", n, err)
	}
	if string(pre[:6]) != string(magic) {
		return bad("no .npy magic (\\x93NUMPY) at the start")
	}
	var hlen, off int
	switch pre[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(pre[8:])), 10
	case 2, 3:
		hlen, off = int(binary.LittleEndian.Uint32(pre[8:])), 12
	default:
		return bad("format version %d.%d: want 1, 2 or 3", pre[6], pre[7])
	}
	if hlen > 1<<20 {
		return bad("header of %d bytes: want at most 1 MiB", hlen)
	}
	text := make([]byte, hlen)
	if n, _ := r.ReadAt(text, int64(off)); n != hlen {
		return bad("header of %d bytes, the file ends after %d", hlen, n)
	}
	h, err := parseDict(string(text))
	if err != nil {
		return bad("%v", err)
	}
	h.DataOffset = int64(off + hlen)
	switch {
	case h.Fortran:
		return bad("fortran_order True: want a C-order (row-major) array")
	case h.Descr == ">f8" || h.Descr == ">i8":
		return bad("dtype %q is big-endian: want %q or %q", h.Descr, Float64, Int64)
	case h.Descr != Float64 && h.Descr != Int64:
		return bad("dtype %q: want %q or %q", h.Descr, Float64, Int64)
	case len(h.Shape) < 1 || len(h.Shape) > 3:
		return bad("shape %v: want 1 to 3 dimensions", h.Shape)
	}
	h.ElementSize = 8
	return h, nil
}

// parseDict reads the header's Python dict literal.
func parseDict(s string) (Header, error) {
	var h Header
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return h, fmt.Errorf("header %q: want a Python dict", s)
	}
	body := s[1 : len(s)-1]
	seen := map[string]bool{}
	for body = strings.TrimSpace(body); body != ""; body = strings.TrimSpace(body) {
		if len(body) < 2 || (body[0] != '\'' && body[0] != '"') {
			return h, fmt.Errorf("header %q: want a quoted key at %q", s, body)
		}
		end := strings.IndexByte(body[1:], body[0])
		if end < 0 {
			return h, fmt.Errorf("header %q: unterminated key", s)
		}
		key := body[1 : end+1]
		body = strings.TrimSpace(body[end+2:])
		if !strings.HasPrefix(body, ":") {
			return h, fmt.Errorf("header %q: want ':' after key %q", s, key)
		}
		body = strings.TrimSpace(body[1:])
		var val string
		switch {
		case strings.HasPrefix(body, "("):
			i := strings.IndexByte(body, ')')
			if i < 0 {
				return h, fmt.Errorf("header %q: unterminated tuple", s)
			}
			val, body = body[:i+1], body[i+1:]
		case strings.HasPrefix(body, "'") || strings.HasPrefix(body, `"`):
			i := strings.IndexByte(body[1:], body[0])
			if i < 0 {
				return h, fmt.Errorf("header %q: unterminated string", s)
			}
			val, body = body[:i+2], body[i+2:]
		default:
			i := strings.IndexAny(body, ",}")
			if i < 0 {
				i = len(body)
			}
			val, body = strings.TrimSpace(body[:i]), body[i:]
		}
		body = strings.TrimSpace(body)
		body = strings.TrimPrefix(body, ",")
		seen[key] = true
		switch key {
		case "descr":
			if len(val) < 2 || (val[0] != '\'' && val[0] != '"') {
				return h, fmt.Errorf("descr %s: want a dtype string such as '<f8'", val)
			}
			h.Descr = val[1 : len(val)-1]
		case "fortran_order":
			switch val {
			case "True":
				h.Fortran = true
			case "False":
			default:
				return h, fmt.Errorf("fortran_order %s: want True or False", val)
			}
		case "shape":
			if !strings.HasPrefix(val, "(") {
				return h, fmt.Errorf("shape %s: want a tuple", val)
			}
			for _, f := range strings.Split(strings.Trim(val, "()"), ",") {
				f = strings.TrimSpace(f)
				if f == "" {
					continue
				}
				n, err := strconv.Atoi(strings.TrimSuffix(f, "L"))
				if err != nil || n < 0 {
					return h, fmt.Errorf("shape %s: want non-negative integers", val)
				}
				h.Shape = append(h.Shape, n)
			}
		default:
			return h, fmt.Errorf("header key %q: want descr, fortran_order and shape", key)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("header %q has no %q", s, k)
		}
	}
	return h, nil
}

// EncodeHeader returns the header of a C-order array of descr (Float64 or
// Int64) and shape, version 1.0, padded so the data starts at a multiple of
// 64 bytes as NumPy writes it.
func EncodeHeader(descr string, shape []int) ([]byte, error) {
	if descr != Float64 && descr != Int64 {
		return nil, fmt.Errorf("npy: dtype %q: want %q or %q", descr, Float64, Int64)
	}
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	hlen := len(dict) + pad + 1
	if hlen > math.MaxUint16 {
		return nil, fmt.Errorf("npy: header of %d bytes does not fit version 1.0", hlen)
	}
	out := make([]byte, 0, total+pad)
	out = append(out, magic...)
	out = append(out, 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	out = append(out, dict...)
	out = append(out, strings.Repeat(" ", pad)...)
	return append(out, '\n'), nil
}

// Decode converts raw little-endian elements of descr into dst.
func Decode(descr string, raw []byte, dst []float64) {
	switch descr {
	case Int64:
		for i := range dst {
			dst[i] = float64(int64(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	default:
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
}

// Encode converts vals to little-endian elements of descr, appended to
// dst; an Int64 value that is not an integer is an error naming it.
func Encode(descr string, vals []float64, dst []byte) ([]byte, error) {
	for i, v := range vals {
		if descr == Int64 {
			if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
				return nil, fmt.Errorf("element %d is %g: want an integer for dtype %s", i, v, Int64)
			}
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(v)))
			continue
		}
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst, nil
}
