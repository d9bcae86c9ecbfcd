package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tessera-amt/tessera/internal/zarr"
)

// fileChecksum is the sum of the first 1000 rows of the 2-D Zarr array
// in directory path, read from its first chunks: checksum's figure for a
// result that is a file rather than an array.
func fileChecksum(path string) (float64, error) {
	raw, err := os.ReadFile(filepath.Join(path, ".zarray"))
	if err != nil {
		return 0, err
	}
	m, err := zarr.ParseMeta(path, raw)
	if err != nil {
		return 0, err
	}
	if len(m.Shape) != 2 {
		return 0, fmt.Errorf("zarr %s: shape %v, want 2-D", path, m.Shape)
	}
	rows, cols := min(1000, m.Shape[0]), m.Shape[1]
	var codec zarr.Codec
	sum := 0.0
	for i := 0; i*m.Chunks[0] < rows; i++ {
		for j := 0; j*m.Chunks[1] < cols; j++ {
			key := m.Key([]int{i, j})
			stored, err := os.ReadFile(filepath.Join(path, key))
			if err != nil {
				return 0, err
			}
			vals, err := codec.Decode(m, stored)
			if err != nil {
				return 0, fmt.Errorf("zarr %s chunk %s: %v", path, key, err)
			}
			for r := range min(m.Chunks[0], rows-i*m.Chunks[0]) {
				for c := range min(m.Chunks[1], cols-j*m.Chunks[1]) {
					sum += vals[r*m.Chunks[1]+c]
				}
			}
		}
	}
	return sum, nil
}
