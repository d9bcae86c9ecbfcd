//go:build !unix

package main

// syncDisks does nothing where sync(2) is missing.
func syncDisks() {}
