//go:build openblas

package main

// openblasTag reports whether the command was built with -tags openblas.
const openblasTag = true
