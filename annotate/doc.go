// Package annotate describes how a distributed array is cut into tiles:
// the array's name and generation, the locality that holds each tile, and
// each tile's half-open spans per dimension (columns, rows, pages). It
// provides the tiling types row, column, page, sym and user, overlaps
// (halos), intersection of spans and retile plans, and the printed form of
// annotations that Phylanx users know.
//
// annotate is pure description: it holds no array data and sends nothing.
//
// The package is being built; this comment states its role in the layout.
package annotate
