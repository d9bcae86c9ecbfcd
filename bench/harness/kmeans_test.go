package main

import (
	"slices"
	"testing"
)

func TestKMeansLines(t *testing.T) {
	out := "[L0] kmeans: 2000000 points x 32, k = 16 on 2 localities: 10 iterations (converged: false), inertia 123.5; read 1.250 s, clustered 3.500 s\n[L1] other\n"
	want := []string{"BenchmarkKMeans/tessera 1 3.500 s/op 123.5 inertia"}
	if got := kmeansLines(out); !slices.Equal(got, want) {
		t.Errorf("kmeansLines = %q, want %q", got, want)
	}
	if got := kmeansLines("[L0] kmeans: failed\n"); got != nil {
		t.Errorf("without a summary: %q", got)
	}
}
