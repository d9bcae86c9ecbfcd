// Package annotate describes how a distributed array is cut into tiles:
// the array's name and generation, the locality that holds each tile, and
// each tile's half-open spans per dimension (columns, rows, pages). It
// provides the tiling types row, column, page, sym and user, overlaps
// (halos), intersection of spans and retile plans, and the printed form of
// annotations that Phylanx users know.
//
// annotate is pure description: it holds no array data and sends nothing.
// Every function is pure; there is no global state.
//
// # Spans, blocks and dimensions
//
// A Span is a half-open range [Start, Stop). A Block holds one Span per
// dimension, outermost first, in the order of the array's shape as numpy
// and Phylanx give it: (pages, rows, columns) for 3-D, (rows, columns) for
// 2-D, and (columns) for a 1-D vector, as Phylanx names a vector's only
// dimension (DimName). Arrays have 1 to 3 dimensions (MaxDims).
//
// # Tilings
//
// A Tiling is a shape and one Tile per locality: Tiles[i] is held by
// locality i, as "meta_i" in the printed form. A Tile has an Owned block —
// the owned blocks partition the array, every element owned exactly once —
// and a Halo block, the Owned block plus the overlap, which is what the
// locality stores.
//
// New builds the tiling types of Phylanx:
//
//   - row splits the rows, column the columns (both split a 1-D vector),
//     page splits the pages of a 3-D array;
//   - sym cuts a grid whose factors multiply to the number of tiles, at most
//     one tile per element along each dimension, choosing the grid whose
//     average tile extents are closest to equal (smallest ratio of largest
//     to smallest extent) and, on a tie, the one that splits outer
//     dimensions more. So 4 tiles of a square matrix are 2x2, 2 tiles split
//     the longer dimension (the rows of a square), 6 tiles of a 300x200
//     matrix are 3x2 and of a 200x300 matrix 2x3, 4 tiles of a 1000x10
//     matrix are 4x1, and 2 tiles of the (2000, 80, 3) array split pages.
//     Grid tiles are numbered row-major (last dimension fastest);
//   - user takes explicit owned blocks (NewUser) and rejects blocks that
//     overlap (naming both tiles and the common block), leave a gap (naming
//     the first element no tile holds), lie outside the array, or have the
//     wrong number of dimensions.
//
// Along a split dimension of length d cut into n tiles, the first d%n
// tiles get one element more: 7 over 3 is 3, 2, 2 and 1000 over 7 is six
// tiles of 143 and one of 142.
//
// Tiles are never empty. A tiling with more tiles than elements along a
// split dimension is an error naming that dimension ("row tiling of 9
// tiles over 7 rows: more tiles than rows"), as HPX and Phylanx users
// expect, rather than a tiling with empty tiles. The one exception is the
// single tile of an array with no element.
//
// Tiling.WithHalo(k) adds an overlap of k elements: each tile's Halo grows
// by k at every interior edge (an edge not on the array's boundary) in
// every dimension, clipped to the array; Owned is unchanged. A negative k
// is an error. Tiling.Transpose reverses the dimensions, as transpose_d
// swaps rows and columns.
//
// # Annotations
//
// An Annotation holds the array's name, its generation, this locality and
// the tiling; the number of localities is the number of tiles. The name
// prints as "name/generation"; Next returns a copy with the generation
// incremented, for every result derived from the array. String prints the
// form of Listing 3 of the JetLag paper on one line. The (2000, 80, 3)
// array of Listing 2, page-tiled on 2 localities, prints on locality 0 as
//
//	annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 0, 2], ["name", "HAR_csv_1/0"])
//
// (the paper's typesetting leaves each meta list unclosed; the brackets
// here balance). "tile" is the block the locality stores; a tile with an
// overlap adds its owned block as ["owned", ...] after it, so without
// overlap the text is exactly the paper's. Parse reads this form back,
// with any whitespace between tokens and entries in any order; malformed
// text gives a *ParseError naming the byte offset (and line and column),
// what was expected and what was found.
//
// # Retiling
//
// Plan(src, dst) lists the Pieces of a retile between two tilings of one
// shape: for each target tile and each source tile, the intersection of the
// source's owned block with the target's held block (so target halos are
// filled, source halos never read), as (from locality, to locality, global
// block). Every element of every target tile is covered by exactly one
// piece. Local pieces (from == to) are included; Moved sums the elements
// of the others, the data a retile transfers.
package annotate
