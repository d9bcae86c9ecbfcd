//go:build !unix

package main

// peakRSSKiB is 0 where getrusage is missing.
func peakRSSKiB() int64 { return 0 }
