package main

import (
	"slices"
	"testing"
)

func TestALSLargeLines(t *testing.T) {
	out := "[L0] als: 138000 users x 27000 items, 19967844 ratings, 64 factors, solver cg, 3 steps, 2 localities; input ready in 6.296 s\n" +
		"[L1] iteration 1/2: 9 s, loss 1\n[L0] iteration 1/2: 17.5 s, loss 778524433.5\n[L0] iteration 2/2: 16.5 s, loss 688067956.8\n" +
		"[L0] als: 2 iterations in 34.0 s on 2 localities\n"
	want := []string{"BenchmarkALSLarge/input 1 6.296 s/op", "BenchmarkALSLarge/iteration 2 17.000 s/op 688067956.8 loss"}
	if got := alsLargeLines(out); !slices.Equal(got, want) {
		t.Errorf("alsLargeLines = %q, want %q", got, want)
	}
	// --loss-every 0: the loss after the last iteration only.
	sparse := "[L0] als: input ready in 6.296 s\n[L0] iteration 1/2: 17.5 s\n[L0] iteration 2/2: 16.5 s, loss 688067956.8\n"
	if got := alsLargeLines(sparse); !slices.Equal(got, want) {
		t.Errorf("alsLargeLines without a loss on every line = %q, want %q", got, want)
	}
	// Every locality's peak RSS after the last iteration (not an earlier
	// one), summed, the largest, and the sum over the file's size.
	mem := "[L0] als: 2 localities; input ready in 6.296 s (a file of 2097152 bytes)\n" +
		"[L1] memory: locality 1, iteration 1: peak RSS 9999 KiB, 3 live arrays of 10 bytes\n" +
		"[L0] iteration 1/2: 17.5 s\n[L0] iteration 2/2: 16.5 s, loss 688067956.8\n" +
		"[L1] memory: locality 1, iteration 2: peak RSS 3000 KiB, 3 live arrays of 10 bytes\n" +
		"[L0] memory: locality 0, iteration 2: peak RSS 1096 KiB, 3 live arrays of 10 bytes\n"
	wantMem := append(slices.Clone(want), "BenchmarkALSLarge/rss 1 4096 KiB 3000 max-KiB 2 localities 2.000 rss/file")
	if got := alsLargeLines(mem); !slices.Equal(got, wantMem) {
		t.Errorf("alsLargeLines with the memory lines = %q, want %q", got, wantMem)
	}
	if got := alsLargeLines("[L0] iteration 1/2: 17.5 s, loss 1\n"); got != nil {
		t.Errorf("without the input line: %q, want nothing", got)
	}
}

func TestNumpyIterationLines(t *testing.T) {
	out := "als_numpy: 10 users x 5 items, 20 ratings, 64 factors\niteration 1/3: 20.5 s\niteration 2/3: 19.5 s\n" +
		"iteration 3/3: 21.0 s, loss 12345.5\nBenchmarkALS/numpy 3 61.0 s/op 12345.5 loss\n"
	want := []string{"BenchmarkALSLarge/numpy_iteration 3 20.333 s/op 12345.5 loss"}
	if got := numpyIterationLines(out); !slices.Equal(got, want) {
		t.Errorf("numpyIterationLines = %q, want %q", got, want)
	}
	if got := numpyIterationLines("iteration 1/3: 20.5 s\n"); got != nil {
		t.Errorf("without a loss: %q, want nothing", got)
	}
}

// TestOptionalPlanOnlyByName: the optional section runs only when named
// exactly, never by default nor for a word it merely contains.
func TestOptionalPlanOnlyByName(t *testing.T) {
	large := plan{name: "als-large", optional: true}
	if chosen(large, nil) || chosen(large, []string{"als"}) || !chosen(large, []string{"cannon", "als-large"}) {
		t.Error("the optional plan is chosen by default or by a part of its name, or not by its name")
	}
	if !chosen(plan{name: "als"}, nil) || !chosen(plan{name: "als"}, []string{"als-large", "als"}) {
		t.Error("a plan that is not optional is not chosen as before")
	}
}
