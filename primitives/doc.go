// Package primitives holds Tessera's distributed arrays and the distributed
// primitives over them, the Phylanx layer of the JetLag paper (section
// III-C): each primitive takes arrays or futures of arrays and returns a
// future, so a program is a chain of futures that blocks only when it asks
// for a value.
//
// It uses runtime for tasks, futures and collectives and annotate to
// describe tiles; it owns no transport. Local numerics use gonum (Array.Dense
// is a mat.Dense view of a 2-D tile).
//
// # Env
//
// Every locality of a job creates an Env (NewEnv) on its runtime: the
// locality's context for arrays, holding the one runtime.Communicator
// (basename CommunicatorName, all localities) that every array collective
// uses. Programs are SPMD: every locality calls the same primitives in the
// same order. Every primitive takes a context and the Env first. Main
// does the set-up of such a program (Register, runtime.Main, NewEnv).
//
// # Arrays
//
// An Array is a float64 array of 1, 2 or 3 dimensions as one locality holds
// it: its annotate.Annotation (name, generation, this locality, every
// locality's tile) and this locality's tile as contiguous row-major memory
// over the tile's held block (LocalBlock; with an overlap the held block is
// the owned block, OwnedBlock, plus the halo). Tile i is held by locality
// i. A Layout says how a new array is cut: a tiling kind (annotate.Row,
// Column, Page, Sym) or an explicit annotate.Tiling, an optional overlap,
// and a name (by default "<primitive>_<k>", counted per Env). Every
// locality computes the same tiling from the same Layout, so building an
// array needs no communication. Arrays come from the generative primitives,
// from NewArray (this locality's tile, kept without copying) or FromGlobal
// (the tile copied out of the whole array); runtime.MakeReady turns one
// into a future for the other primitives. Arrays are never changed once
// made. Primitives make their results with Env.newArray, which publishes
// the tile (below).
//
// Each array has a local view — Local, LocalBlock, OwnedBlock, Dense and
// View (a sub-block of the tile sharing its memory, numpy's view) — and a
// global view: Shape, Annotation (every locality's tile) and Fetch, which
// reads any block of the whole array from wherever it lives.
//
// # Tiles in AGAS, fetching blocks, lifetime
//
// Every array is published on its locality when made: its tile goes into
// the locality's tile table (a local map by full name, no message), from
// which the fetch_block action serves any block of it as one raw chunk
// that the caller reads straight into its slice (runtime.AsyncInto; a
// fetch that arrives before the owner made the array waits without
// keeping a worker lane). An array something fetches from is also named
// in AGAS, once: its tile becomes an AGAS component (the tile's bytes and
// shape, sharing the array's memory) registered as
// /array/<name>/<generation>/<locality> (basename
// "array/<name>/<generation>", sequence number the locality; the
// registration is a future nobody waits for): arrays nothing fetches from,
// most intermediate results, never cost AGAS parcels.
//
// MigrateTile moves a tile's component to another locality, from any
// locality, also while primitives fetch from the array. Fetches resolve
// where a tile lives: a tile this locality knows moved is read through
// AGAS (agas.ReadInto: the owner from the locality's cache, a map
// look-up, or through the tile's home; a locality the tile left forwards
// the fetch and corrects the cache); any other is fetched by name from
// its locality, which answers from its memory — every tile that never
// moved, at no extra cost — or, if the tile moved, forwards the fetch
// through AGAS and tells the asker the tile's GID for its next fetches.
// Either way the reply lands in the caller's slice. The annotation keeps
// describing the tiling after a move: tile i is locality i's part, which
// its primitives compute with and its local view (Local, Dense, View)
// shows, from memory it keeps (arrays never change); a move relocates
// where the tile is served from, which TileLocality reports.
//
// Derived results (element-wise, Transpose, Retile, Dot, slices, ...) are
// named "<base>~<k>" — the first input's name without an earlier "~<k>",
// k the Env's count of named arrays taken when the primitive is called —
// with generation one more than the highest input's: unique per Env and
// the same on every locality. A name given in a Layout must not be in use
// on the locality.
//
// Lifetime: an array is reclaimed once no locality needs it, without the
// program calling anything. Each locality releases its part when its
// program calls Array.Release or when no code of the locality can reach
// the *Array any more: the *Array is a thin handle over the array's state
// (annotation, tile, pins) which the tile table, the AGAS component and
// the fetch actions refer to — never the handle — and a cleanup on the
// handle (runtime.AddCleanup) releases the state once the collector finds
// the handle unreachable. A primitive pins the arrays it reads, which keeps
// their handles reachable until it is done; futures holding an array keep
// it too. Releasing tells the others with one small parcel (SPMD: every
// locality releases, explicitly or by dropping it), and a tile is dropped
// — table, AGAS name and component, memory — once its locality has
// released it and heard from all the others, so a fast locality keeps
// serving slower ones. A locality sends its release only once its own
// fetches from the array are in, so no tile is dropped under a fetch; a
// fetch or primitive on an array released on the locality fails naming
// the array, its generation and the locality (Local panics). A job whose
// locality dies fails as before; nothing waits for releases.
//
// Release is optional: it makes the return prompt (the collector runs
// when the Go heap grows, and tiles in shared memory do not count there)
// and gives the tile's memory back for reuse at once; releasing twice,
// or Release then the cleanup, does nothing more. A tile whose memory the
// program was given (Local, Dense, View) and which was not released by
// Release may still be read through such a slice: its memory is left to
// the collector rather than reused (a shared-memory tile then stays
// mapped until the process ends; Release it).
//
// Donate(a) releases a once the primitive it is given to has read it;
// Cholesky and LU make their factor in its memory instead of fresh memory
// when every locality donated it, as scipy's overwrite_a does.
//
// Env.Counters gives the locality's BytesFetched, BlocksFetched,
// BytesServed and FetchesForwarded (of its tiles that had moved),
// LiveArrays and LiveArrayBytes/PeakArrayBytes (arrays made and not yet
// dropped, their tiles' memory) and AGASNames (their tiles' names in
// AGAS).
//
// # Primitives
//
// Generative (generation 0, no communication): Constant, Full, Zeros,
// Ones, Identity, Random (uniform in [0, 1)) and RandomNormal. The random
// ones draw element g (the global row-major linear index) from a
// counter-based generator, splitmix64 of the seed and g, so the distributed
// array equals the single-locality array with that seed whatever the
// tiling.
//
// Element-wise (a derived result, no collective): Add, Sub, Mul, Div,
// Pow, Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, Maximum,
// Minimum and Map2 between two arrays, Where and Clip among three, all
// broadcast by numpy's rules (broadcast.go): the result is tiled like the
// first operand of the result's shape, and an operand tiled otherwise, or
// smaller, is aligned by fetching the blocks a locality lacks, once;
// shapes that do not broadcast are an error naming both shapes numpy's
// way. Scalar makes a 0-d operand, held by every locality. AddScalar,
// SubScalar, ScalarSub, MulScalar, DivScalar, ScalarDiv, EqualScalar,
// NotEqualScalar (Listing 4's _ne(a, 0.0, true)), LessScalar,
// GreaterScalar and ClipScalar take a number; Exp, Log, Sqrt, Abs, Neg and
// Map one array. Comparisons give 0/1 masks. Transpose reverses the
// dimensions (a row-tiled matrix becomes column-tiled) and TransposeAxes
// permutes them: each locality permutes its own tile and the annotation's
// spans follow. Reshape keeps every tile where it is, or fails. Updates —
// SetBlock, SetRow, SetColumn, FillBlock — make a new generation whose
// tiles the update misses share the old memory.
//
// Moving and multiplying (fetches, no collective unless said): Retile
// (retile_d) lays an array out anew — any kind, explicit tiles, with or
// without an overlap — moving only the pieces of annotate.Plan: each
// locality copies what it owned and fetches every other piece of its new
// tile from its owner. VDot is the inner product of two vectors (partial
// dots over the owned elements, the other vector's matching blocks fetched
// when tiled differently, one AllReduce). Dot is numpy's dot of vectors
// and matrices of any tiling: it picks, from the annotations, the plan
// that moves the fewest bytes (by rows, by columns, or splitting the inner
// dimension with one AllGather) and gathers an operand whole only below
// DotGatherLimit elements. Outer, Concatenate and Stack fetch the pieces
// their tiles need.
//
// Slicing follows numpy: Slice(a, block) is a[r0:r1, c0:c1] with a's
// number of dimensions, SliceRow and SliceColumn are a[i, :] and a[:, j]
// (negative indices count from the end) as vectors. A distributed slice is
// a new array laid out by its own Layout, filled like a retile.
//
// Reductions (local work on the owned elements plus one collective): Sum,
// Mean, Max, Min (NaN if any element is NaN), ArgMax and ArgMin (the global
// row-major linear index; the smallest index on a tie, the first NaN if
// any). Along an axis (axis_reduce.go): SumAxis, ProdAxis, MeanAxis,
// VarAxis, StdAxis, MinAxis, MaxAxis, ArgMinAxis, ArgMaxAxis (indices as
// float64 exact integers), AnyAxis and AllAxis, with keepdims, or
// ReduceAxis and ReduceAxisWhole: no communication along an axis no tile
// splits (the result tiled like the remaining axes), else one AllGather of
// partial results and a replicated result. ZScore standardises along an
// axis as scipy's zscore (ddof 0): one pass for the mean and variance
// together, one for the result. docs/numpy.md maps numpy's and
// Phylanx's names to these. Shape needs no communication. AllGather returns the whole array on
// every locality as a Whole (shape and row-major data), through one
// AllToAllV of the owned tile blocks.
//
// # Matrix product, inverse and the BLAS
//
// CannonProduct (cannon_product_d) multiplies two 2-D arrays where their
// tiles are: Cannon's algorithm on p = q² localities (A and B tiled as a
// q x q grid, the sym tiling of a square enough matrix; the next step's
// tiles travel over a runtime.Channel during the current Dgemm), SUMMA on
// any other count (A and B on the same r x c grid; panels broadcast along
// grid rows and columns through communicators of the call). No locality
// holds more than its tiles and two tiles or panels per operand in flight;
// those buffers count in Env.Counters' array memory. Inverse (inverse_d)
// runs Gauss-Jordan with partial pivoting over a row-tiled square matrix:
// per column one AllGather picks the pivot row and its owner broadcasts
// it; a singular matrix is an error. Both take one collective of the Env's
// communicator, reserved when called, before their own messages, so a
// failed input fails them everywhere.
//
// Local numerics use gonum's blas64 and lapack64. A build with -tags
// openblas runs them on OpenBLAS (through gonum.org/v1/netlib, cgo;
// Debian's libopenblas-dev and liblapacke-dev): Register sets it, and makes
// OpenBLAS single-threaded unless OPENBLAS_NUM_THREADS is set, since a
// locality already runs its tasks on every core. BLAS names the one in use.
//
// # CSV files, convolution and diagonals
//
// ReadCSV (file_read_csv_d) reads a 2-D array (rows, columns) or, with
// CSVOptions.RowsPerPage, a 3-D one (pages, rows per page, columns) from a
// CSV file every locality can open; its default name follows Listing 3
// ("HAR_csv_1" for HAR.csv). Each locality reads only its share: it scans
// the lines starting in its byte range of the file, every locality gathers
// the counts (the shape and every range's first line number), the owners
// of each tile's first and last rows publish their byte offsets, and each
// locality parses the bytes of its own tile — three collectives, reserved
// when ReadCSV is called. A bad row (ragged, not a number: named by file,
// line and column), a missing file or a row count that is not a multiple of
// the rows per page fails the future on every locality.
//
// Conv1D (conv1d_d) is Keras' Conv1D without bias (valid, same or causal
// padding, stride, dilation) of an array by a kernel every locality holds
// whole (a Whole of shape (size, input channels, output channels)): a
// page-tiled 3-D input is convolved page by page with no communication
// and the result keeps its page tiling; a 2-D (steps, channels) input of
// any tiling gets the steps its output rows need — the neighbours' halo —
// in one AllToAllV, and the result is row-tiled. Each locality multiplies
// its im2col matrix by the kernel with blas64.Gemm, in blocks of rows
// spread over its worker lanes.
//
// Diag (numpy's diag) turns a vector into a diagonal matrix row-tiled as
// the vector (no communication) and a matrix into its diagonal: tiled as
// the tiles own the diagonal when each owns part of it, otherwise row-tiled
// through one AllToAllV.
//
// # Dense linear algebra as task graphs
//
// BlockCyclic lays a matrix out as ScaLAPACK does (nb x nb blocks dealt
// round a p x q grid); Retile moves arrays to and from it, moving only the
// elements that change owner. Cholesky, LU (partial pivoting), QR and the
// solves (SolveTriangular, SolveSPD, SolveLU, LeastSquares) run one task
// per tile kernel on the tile's owner — named after the kernel and tile,
// potrf(k,k), trsm(i,k), gemm(i,j,k), laswp(k,j); Cholesky updates up to
// 8 of a column's tiles in one gemm(i0:i1,j,k); LU on a 1 x q grid one
// update(k,j0:j1) of a locality's whole block row — with futures as the
// dependencies, and ready kernels run earliest column first, so the next
// panel starts while the trailing update runs; each tile reaches each
// locality that needs it once per step. TSQR reduces the local QRs of a tall-skinny matrix along a tree;
// SVDTall and TruncatedSVD (a randomized range finder with power
// iterations through TSQR) build on it. A matrix that is not positive
// definite or is singular fails with an error naming the global column.
// Only these primitives and Retile read block-cyclic arrays; the others
// refuse them, and a new array cannot be made block-cyclic.
//
// # Array I/O that Python reads and writes
//
// WriteZarr writes an array as a Zarr v2 directory store (<f8 or <i8,
// order C; compressor none, zlib, gzip or zstd): each locality writes the
// chunks that start in its tile, fetching from other tiles only what those
// chunks lack. ReadZarr reads one into any Layout, each locality reading
// only the chunks its tile meets, Python zarr's Blosc (lz4, zlib or zstd,
// byte shuffle) included; a missing chunk is the fill value, as zarr has
// it. SaveZarr writes a small Whole from one locality. ReadNPY and WriteNPY
// do the same for one .npy file (each locality reads or writes its rows),
// and WriteCSV writes one CSV file, each locality its byte range.
// ZScoreZarr is scipy's zscore along axis 0 from one Zarr store to another
// without holding the array: each locality streams its chunks twice. The
// format codecs are internal/zarr and internal/npy.
//
// # Collectives of chained primitives
//
// A primitive that needs a collective reserves the communicator's
// generation synchronously, when it is called — in program order, the same
// on every locality — and issues the collective on the reservation once
// its inputs are ready: runtime.Reservation has the communicator's
// operations as methods (r.AllReduce(ctx, ...)), and a context never
// carries one. Inputs become ready in different orders on different
// localities; the reservation keeps the collectives of chained
// primitives paired all the same. When an input fails, or the input is
// bad, the reservation is cancelled with that error, so the other
// localities' collective fails instead of waiting.
//
// # Errors
//
// Bad input fails the returned future with an error naming the primitive,
// the locality, the arrays and what was expected: mismatched shapes
// ("arrays a/0 of shape [7 5] and b/0 of shape [5 7] are not conformable"),
// shapes that do not broadcast ("operands could not be broadcast together
// with shapes (7,5) (5,7)"), an axis out of range, a reshape that would
// move data, an update whose value does not broadcast to the part, a
// tiling with more tiles than elements along a split dimension, a tiling
// of another shape or tile count, the maximum of an empty array. A failed input fails every primitive that depends on it
// with its error.
package primitives
