// Command arrayjob is a Tessera SPMD program for the primitives'
// real-process tests.
//
//	arrayjob <scenario>
//	arrayjob -list
//
// The first runs one scenario on every locality of the job and prints
// "locality N ok" when its results equal a single-process reference that
// every locality computes by itself. Each scenario is in its own file; the
// map in main lists them; -list prints their names, one per line.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// scenario is one test run on every locality: nil when its results equal
// the reference.
type scenario func(ctx context.Context, e *primitives.Env) error

func main() {
	scenarios := map[string]scenario{
		"elementwise": elementwise,
		"fetch":       fetchBlocks,
		"retile":      retile,
		"dot":         dot,
		"slice":       slice,
		"cannon":      cannon,
		"csvconv1d":   csvConv1D,
		"csverrors":   csvErrors,
		"reductions":  reductions,
		"inverse":     inverse,
		"reclaim":     reclaim,
	}
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(os.Args) == 2 && os.Args[1] == "-list" {
		fmt.Println(strings.Join(names, "\n"))
		return
	}
	if len(os.Args) != 2 || scenarios[os.Args[1]] == nil {
		fmt.Fprintf(os.Stderr, "usage: arrayjob <scenario>; scenarios: %s\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	run := scenarios[os.Args[1]]
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		if err := run(ctx, e); err != nil {
			return fmt.Errorf("arrayjob %s on locality %d: %w", os.Args[1], rt.Here(), err)
		}
		fmt.Printf("locality %d ok\n", rt.Here())
		return nil
	}))
}
