// Package zarr is the Zarr version 2 format without any I/O of arrays: the
// metadata of an array (.zarray), the names of its chunks and the encoding
// of one chunk (dtype "<f8" or "<i8", C order, no filters) with the
// compressors none, zlib, gzip and zstd, and the decoding of Blosc chunks
// (lz4, zlib or zstd inside, with or without byte shuffle), Python zarr's
// default. It reads and writes bytes only; package primitives decides which
// locality reads and writes which chunk.
package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dtypes the package reads and writes: little-endian float64 and int64.
const (
	Float64 = "<f8"
	Int64   = "<i8"
)

// maxChunkElems bounds a chunk: 2 GiB of 8-byte elements, Blosc's limit
// too.
const maxChunkElems = 1 << 28

// Compressor is the "compressor" of an array's metadata; nil means none.
// ID is "zlib", "gzip", "zstd" or "blosc"; Level is the level of the first
// three; Cname, Clevel, Shuffle and Blocksize are Blosc's.
type Compressor struct {
	ID        string `json:"id"`
	Level     int    `json:"level,omitempty"`
	Cname     string `json:"cname,omitempty"`
	Clevel    int    `json:"clevel,omitempty"`
	Shuffle   int    `json:"shuffle,omitempty"`
	Blocksize int    `json:"blocksize,omitempty"`
}

// Meta is an array's metadata, the .zarray file.
type Meta struct {
	Shape      []int
	Chunks     []int
	Dtype      string // Float64 or Int64
	Compressor *Compressor
	Fill       float64 // the fill value of missing chunks (NaN allowed for <f8)
	Separator  string  // between a chunk key's indices: "." (the default) or "/"
}

// rawMeta is .zarray as JSON.
type rawMeta struct {
	ZarrFormat int             `json:"zarr_format"`
	Shape      []int           `json:"shape"`
	Chunks     []int           `json:"chunks"`
	Dtype      json.RawMessage `json:"dtype"`
	Compressor *Compressor     `json:"compressor"`
	FillValue  json.RawMessage `json:"fill_value"`
	Order      string          `json:"order"`
	Filters    json.RawMessage `json:"filters"`
	Separator  string          `json:"dimension_separator,omitempty"`
}

// ParseMeta reads .zarray; name (the array's path) is in every error,
// which says what was expected and what was found.
func ParseMeta(name string, data []byte) (Meta, error) {
	bad := func(format string, args ...any) (Meta, error) {
		return Meta{}, fmt.Errorf("zarr array %s: %s", name, fmt.Sprintf(format, args...))
	}
	var r rawMeta
	if err := json.Unmarshal(data, &r); err != nil {
		return bad(".zarray is not valid JSON: %v", err)
	}
	if r.ZarrFormat != 2 {
		return bad("zarr_format %d: want 2", r.ZarrFormat)
	}
	var dtype string
	if err := json.Unmarshal(r.Dtype, &dtype); err != nil {
		return bad("dtype %s: want %q or %q (a structured dtype is not supported)", r.Dtype, Float64, Int64)
	}
	if dtype != Float64 && dtype != Int64 {
		return bad("dtype %q: want %q or %q", dtype, Float64, Int64)
	}
	if r.Order != "C" {
		return bad("order %q: want \"C\" (row-major chunks)", r.Order)
	}
	if f := bytes.TrimSpace(r.Filters); len(f) > 0 && string(f) != "null" && string(f) != "[]" {
		return bad("filters %s: want none", f)
	}
	if len(r.Shape) < 1 || len(r.Shape) > 3 || len(r.Chunks) != len(r.Shape) {
		return bad("shape %v, chunks %v: want 1 to 3 dimensions, one chunk extent per dimension", r.Shape, r.Chunks)
	}
	for i := range r.Shape {
		if r.Shape[i] < 0 || r.Chunks[i] < 1 {
			return bad("shape %v, chunks %v: want extents >= 0 and chunk extents >= 1", r.Shape, r.Chunks)
		}
	}
	elems := 1
	for _, c := range r.Chunks {
		if elems *= c; elems > maxChunkElems {
			return bad("chunks %v: want at most %d elements (2 GiB) in a chunk", r.Chunks, maxChunkElems)
		}
	}
	sep := r.Separator
	if sep == "" {
		sep = "."
	}
	if sep != "." && sep != "/" {
		return bad("dimension_separator %q: want \".\" or \"/\"", sep)
	}
	m := Meta{Shape: r.Shape, Chunks: r.Chunks, Dtype: dtype, Compressor: r.Compressor, Separator: sep}
	if err := m.checkCompressor(); err != nil {
		return bad("%v", err)
	}
	fill, err := parseFill(r.FillValue, dtype)
	if err != nil {
		return bad("%v", err)
	}
	m.Fill = fill
	return m, nil
}

// parseFill reads fill_value: null (zero here), a number, or for <f8 one of
// "NaN", "Infinity", "-Infinity".
func parseFill(raw json.RawMessage, dtype string) (float64, error) {
	s := strings.TrimSpace(string(raw))
	switch s {
	case "", "null":
		return 0, nil
	case `"NaN"`:
		if dtype == Float64 {
			return math.NaN(), nil
		}
	case `"Infinity"`:
		if dtype == Float64 {
			return math.Inf(1), nil
		}
	case `"-Infinity"`:
		if dtype == Float64 {
			return math.Inf(-1), nil
		}
	default:
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			if dtype == Int64 && v != math.Trunc(v) {
				return 0, fmt.Errorf("fill_value %s: want an integer for %s", s, dtype)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("fill_value %s: want null or a number of dtype %s", s, dtype)
}

// checkCompressor says whether the compressor is one this package decodes.
func (m Meta) checkCompressor() error {
	c := m.Compressor
	if c == nil {
		return nil
	}
	switch c.ID {
	case "zlib", "gzip", "zstd":
		return nil
	case "blosc":
		switch c.Cname {
		case "lz4", "zlib", "zstd":
			return nil
		}
		return fmt.Errorf("blosc compressor %q: want lz4, zlib or zstd inside", c.Cname)
	}
	return fmt.Errorf("compressor %q: want none, zlib, gzip, zstd or blosc", c.ID)
}

// Marshal returns .zarray for m (order C, no filters, zarr_format 2).
func (m Meta) Marshal() ([]byte, error) {
	if m.Dtype != Float64 && m.Dtype != Int64 {
		return nil, fmt.Errorf("zarr: dtype %q: want %q or %q", m.Dtype, Float64, Int64)
	}
	if err := m.checkCompressor(); err != nil {
		return nil, fmt.Errorf("zarr: %v", err)
	}
	var comp any // JSON null without a compressor
	if c := m.Compressor; c != nil {
		if c.ID == "blosc" {
			return nil, fmt.Errorf("zarr: writing blosc chunks is not supported: want none, zlib, gzip or zstd")
		}
		comp = map[string]any{"id": c.ID, "level": c.Level}
	}
	var fill any = m.Fill
	switch {
	case math.IsNaN(m.Fill):
		fill = "NaN"
	case math.IsInf(m.Fill, 1):
		fill = "Infinity"
	case math.IsInf(m.Fill, -1):
		fill = "-Infinity"
	case m.Dtype == Int64:
		fill = int64(m.Fill)
	}
	sep := m.Separator
	if sep == "" {
		sep = "."
	}
	return json.MarshalIndent(map[string]any{
		"zarr_format":         2,
		"shape":               m.Shape,
		"chunks":              m.Chunks,
		"dtype":               m.Dtype,
		"compressor":          comp,
		"fill_value":          fill,
		"order":               "C",
		"filters":             nil,
		"dimension_separator": sep,
	}, "", "    ")
}

// Grid returns the number of chunks along each dimension.
func (m Meta) Grid() []int {
	g := make([]int, len(m.Shape))
	for i, s := range m.Shape {
		g[i] = (s + m.Chunks[i] - 1) / m.Chunks[i]
	}
	return g
}

// ChunkElems is the number of elements of one chunk (edge chunks are stored
// whole, padded).
func (m Meta) ChunkElems() int {
	n := 1
	for _, c := range m.Chunks {
		n *= c
	}
	return n
}

// Key returns the name of the chunk with grid index idx ("1.0.2").
func (m Meta) Key(idx []int) string {
	sep := m.Separator
	if sep == "" {
		sep = "."
	}
	var b strings.Builder
	for i, v := range idx {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}
