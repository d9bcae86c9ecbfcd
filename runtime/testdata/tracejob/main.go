// Command tracejob is a Tessera SPMD program for the tracer's real-process
// tests: run it with TESSERA_TRACE set.
//
//	tracejob [run] ROUNDS DEPTH  ROUNDS rounds of a task tree of DEPTH
//	                             levels on every locality; prints
//	                             "locality N ok TASKS"
//	tracejob spin DEPTH          task trees until the job fails; prints
//	                             "ready" after the first
//
// A tree node is the action "tracejob.node": a node above the leaves
// spawns a local task (main.leaf, a Go function) and calls the nodes below
// on the next two localities, then waits for the three — so its task
// yields and resumes, and the tree crosses every locality. The OTF2 event chunks
// are the smallest libotf2 allows, so that a lane's events fill several.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tessera-amt/tessera/trace"
)

// leaf is a local task: a little arithmetic.
func leaf(ctx context.Context) (int, error) {
	x := 1
	for i := range 200 {
		x = (x*31 + i) % 1000003
	}
	return 1 + x%1, nil
}

func main() {
	reg := runtime.NewRegistry()
	var node runtime.Action[int, int]
	node = runtime.Register(reg, "tracejob.node", func(ctx context.Context, depth int) (int, error) {
		if depth == 0 {
			return leaf(ctx)
		}
		rt := runtime.FromContext(ctx)
		local := runtime.Spawn(ctx, rt, leaf)
		n := rt.NumLocalities()
		left := runtime.Async(ctx, rt.Locality((rt.Here()+1)%n), node, depth-1)
		right := runtime.Async(ctx, rt.Locality((rt.Here()+2)%n), node, depth-1)
		sum := 1
		for _, f := range []*runtime.Future[int]{local, left, right} {
			v, err := f.Get(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	args := os.Args[1:]
	mode := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "spin") {
		mode, args = args[0], args[1:]
	}
	nums := make([]int, len(args))
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "tracejob: argument %q: want a count\n", a)
			os.Exit(2)
		}
		nums[i] = n
	}
	cfg := runtime.Config{Registry: reg, Trace: runtime.TraceConfig{EvtChunkSize: trace.OTF2MinChunkSize}}
	os.Exit(runtime.Main(cfg, func(ctx context.Context, rt *runtime.Runtime) error {
		here := rt.Locality(rt.Here())
		switch {
		case mode == "run" && len(nums) == 2:
			total := 0
			for range nums[0] {
				n, err := runtime.Async(ctx, here, node, nums[1]).Get(ctx)
				if err != nil {
					return err
				}
				total += n
			}
			fmt.Printf("locality %d ok %d\n", rt.Here(), total)
			return nil
		case mode == "spin" && len(nums) == 1:
			for i := 0; ; i++ {
				if _, err := runtime.Async(ctx, here, node, nums[0]).Get(ctx); err != nil {
					return err
				}
				if i == 0 {
					fmt.Println("ready")
				}
			}
		}
		return errors.New("tracejob: usage: tracejob [run] ROUNDS DEPTH | tracejob spin DEPTH")
	}))
}
