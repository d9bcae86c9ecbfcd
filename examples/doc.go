// Package examples holds Tessera's example programs, each a main package in
// its own directory, written against the public API only:
//
//   - hello: every locality calls an action on every locality and chains
//     the replies; the smallest SPMD program.
//   - als: distributed implicit-feedback ALS (JetLag Listing 4) on MovieLens
//     ratings or generated ones; what `make demo` runs, traced.
//   - conv1d: the data-parallel 1-D convolution of Listing 2, printing the
//     annotations of Listing 3.
//   - cannon: the Cannon (or SUMMA) product of two random matrices, with
//     GFLOP/s and an optional check.
//   - linalg: Cholesky, LU, QR, TSQR and SVD of generated matrices as task
//     graphs on a block-cyclic layout, with residuals and GFLOP/s.
//   - kmeans, logreg, pca: Lloyd's k-means, logistic regression by batch
//     gradient descent and PCA by a distributed covariance, each reading
//     Zarr, NPY or CSV and writing its result as Zarr.
package examples
