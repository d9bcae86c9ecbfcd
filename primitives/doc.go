// Package primitives holds Tessera's distributed arrays and the distributed
// primitives over them — generators, element-wise arithmetic, reductions,
// all_gather, dot, the Cannon product, retile, transpose, conv1d, CSV
// reading — each taking arrays or futures of arrays and returning a future,
// on top of gonum for the local numerics.
//
// It uses runtime for tasks and actions, agas to name and find tiles, and
// annotate to describe them; it owns no transport.
//
// The package is being built; this comment states its role in the layout.
package primitives
