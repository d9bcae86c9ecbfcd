package annotate

import (
	"fmt"
	"slices"
	"strings"
)

// Piece is one block a retile moves: the elements of Block go from
// locality From (which owns them in the source tiling) to locality To
// (which holds them in the target tiling). Block is in global indices.
type Piece struct {
	From, To int
	Block    Block
}

// Local reports whether the piece stays on one locality (a copy, no
// transfer).
func (p Piece) Local() bool { return p.From == p.To }

// String prints the piece as "0 -> 1 [rows [0, 4), columns [0, 7)]".
func (p Piece) String() string { return fmt.Sprintf("%d -> %d %v", p.From, p.To, p.Block) }

// Plan returns the pieces that turn an array tiled as src into the same
// array tiled as dst: for every target tile j and every source tile i, the
// intersection of i's owned block with the block j holds (dst.Tiles[j].Halo,
// so the target's overlap is filled too), when not empty. Since the source's
// owned blocks partition the array, every element of every target tile is
// covered by exactly one piece. Source halos are never read.
//
// Pieces are ordered by To, then From. Local pieces (From == To) are
// included; the elements a retile transfers are those of the other pieces.
// Both tilings must be valid and have the same shape.
//
// When either tiling is block-cyclic, Block stays in global indices and
// each piece lies inside one region (Tiling.Regions) of both tilings, so
// Tiling.Storage maps it to where it is stored on either side; a region
// held by the same locality in both tilings stays local.
func Plan(src, dst Tiling) ([]Piece, error) {
	if err := src.Validate(); err != nil {
		return nil, fmt.Errorf("annotate: retile source: %s", strings.TrimPrefix(err.Error(), "annotate: "))
	}
	if err := dst.Validate(); err != nil {
		return nil, fmt.Errorf("annotate: retile target: %s", strings.TrimPrefix(err.Error(), "annotate: "))
	}
	if !slices.Equal(src.Shape, dst.Shape) {
		return nil, fmt.Errorf("annotate: retile from shape %v to shape %v: shapes differ", src.Shape, dst.Shape)
	}
	if src.Cyclic != nil || dst.Cyclic != nil {
		return planCyclic(src, dst), nil
	}
	var out []Piece
	for j, tt := range dst.Tiles {
		for i, st := range src.Tiles {
			if b, ok := st.Owned.Intersect(tt.Halo); ok {
				out = append(out, Piece{From: i, To: j, Block: b})
			}
		}
	}
	return out, nil
}

// Moved is the number of elements the pieces transfer between different
// localities (local pieces excluded).
func Moved(pieces []Piece) int {
	n := 0
	for _, p := range pieces {
		if !p.Local() {
			n += p.Block.Size()
		}
	}
	return n
}
