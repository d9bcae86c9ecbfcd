package runtime_test

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
)

// Three localities in one process each ask the next one to square their
// id, and chain a continuation on the answer.
func ExampleRegister() {
	ctx := context.Background()
	reg := runtime.NewRegistry()
	square := runtime.Register(reg, "example.square", func(ctx context.Context, x int) (int, error) {
		return x * x, nil
	})
	job, err := runtime.StartLocal(ctx, 3, runtime.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	lines := make([]string, 3)
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		next := rt.Locality((rt.Here() + 1) % rt.NumLocalities())
		sq := runtime.Async(ctx, next, square, int(rt.Here())+1)
		line := runtime.Then(ctx, sq, func(ctx context.Context, v int) (string, error) {
			return fmt.Sprintf("locality %d: %d squared on locality %d is %d", rt.Here(), rt.Here()+1, next.Locality(), v), nil
		})
		s, err := line.Get(ctx)
		lines[rt.Here()] = s
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// locality 0: 1 squared on locality 1 is 1
	// locality 1: 2 squared on locality 2 is 4
	// locality 2: 3 squared on locality 0 is 9
}

// A collective: every locality contributes its id and all get the sum.
func ExampleCommunicator_AllReduce() {
	ctx := context.Background()
	job, err := runtime.StartLocal(ctx, 4, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	sums := make([]float64, 4)
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		comm, err := runtime.NewCommunicator(rt, "ids", nil, 0)
		if err != nil {
			return err
		}
		defer comm.Close()
		sum, err := comm.AllReduce(ctx, []float64{float64(rt.Here())}, runtime.ReduceSum).Get(ctx)
		if err != nil {
			return err
		}
		sums[rt.Here()] = sum[0]
		return nil
	})
	fmt.Println(sums, err)
	// Output: [6 6 6 6] <nil>
}

// Futures of local work, joined: WhenAll is ready when all its inputs are.
func ExampleWhenAll() {
	ctx := context.Background()
	job, err := runtime.StartLocal(ctx, 1, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		var parts []*runtime.Future[int]
		for i := range 4 {
			parts = append(parts, runtime.Spawn(ctx, rt, func(ctx context.Context) (int, error) { return i * 10, nil }))
		}
		all, err := runtime.WhenAll(parts...).Get(ctx)
		fmt.Println(all)
		return err
	})
	fmt.Println(err)
	// Output:
	// [0 10 20 30]
	// <nil>
}
