//go:build linux

package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-amt/tessera/internal/affinity"
)

func TestCoreBlocks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cpus []int
		n    int
		want [][]int
	}{
		{[]int{0, 1}, 4, [][]int{{0}, {0}, {1}, {1}}},
		{[]int{0, 1}, 2, [][]int{{0}, {1}}},
		{[]int{0, 1}, 1, [][]int{{0, 1}}},
		{[]int{0, 1}, 3, [][]int{{0}, {0}, {1}}},
		{[]int{2, 3, 5, 7}, 2, [][]int{{2, 3}, {5, 7}}},
		{[]int{0, 1, 2, 3, 4, 5}, 4, [][]int{{0}, {1, 2}, {3}, {4, 5}}},
	} {
		got := coreBlocks(c.cpus, c.n)
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("coreBlocks(%v, %d) = %v, want %v", c.cpus, c.n, got, c.want)
		}
	}
}

// tessera run --bind core starts each locality bound to its block of the
// launcher's cores (the processes report their own affinity); without it
// they may run anywhere the launcher may.
func TestRunBindCore(t *testing.T) {
	t.Parallel()
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	for _, bind := range []string{bindCore, ""} {
		opts := helperJob(t, n, "affinity")
		opts.Bind = bind
		code, stdout, stderr := runHelperJob(t, opts)
		if code != 0 {
			t.Fatalf("--bind %q: exit status %d; stderr:\n%s", bind, code, stderr)
		}
		lines := byLocality(t, stdout)
		blocks := coreBlocks(cpus, n)
		for loc := range n {
			want := fmt.Sprint(cpus)
			if bind == bindCore {
				want = fmt.Sprint(blocks[loc])
			}
			if len(lines[loc]) != 1 || lines[loc][0] != want {
				t.Errorf("--bind %q: locality %d runs on %q, want %s", bind, loc, lines[loc], want)
			}
		}
	}
	if got, _ := affinity.Allowed(); !slices.Equal(got, cpus) {
		t.Errorf("the launcher's own thread runs on %v after starting bound localities, want %v", got, cpus)
	}
}
