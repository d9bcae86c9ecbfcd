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
	if got := alsLargeLines("[L0] iteration 1/2: 17.5 s, loss 1\n"); got != nil {
		t.Errorf("without the input line: %q, want nothing", got)
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
