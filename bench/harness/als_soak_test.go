package main

import (
	"slices"
	"testing"
)

func TestSoakLines(t *testing.T) {
	out := `[L0] iteration 300/600: 0.010 s, loss 1
[L0] memory: locality 0, iteration 300: peak RSS 19000 KiB, 2 live arrays of 256000 bytes
[L1] memory: locality 1, iteration 300: peak RSS 19500 KiB, 2 live arrays of 256000 bytes
[L1] memory: locality 1, iteration 600: peak RSS 20100 KiB, 2 live arrays of 256000 bytes
[L0] memory: locality 0, iteration 600: peak RSS 20400 KiB, 2 live arrays of 256000 bytes
`
	got := soakLines(300, 600)(out)
	want := []string{"BenchmarkALSSoak/peak-rss-first 1 19500 KiB", "BenchmarkALSSoak/peak-rss-last 1 20400 KiB"}
	if !slices.Equal(got, want) {
		t.Fatalf("soak lines %q, want %q", got, want)
	}
	if got := soakLines(300, 900)(out); got != nil {
		t.Fatalf("a run that stopped early gave %q, want nothing", got)
	}
}
