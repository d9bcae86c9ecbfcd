// Command faultjob is a Tessera program for the runtime's process tests:
// it misbehaves on request.
//
//	faultjob spin           every locality calls every other in a loop until the job fails
//	faultjob wait FILE      wait until FILE exists, then greet everyone and finish
//	faultjob oversize       locality 1 sends locality 0 (limit 1 MiB) a 64 MiB parcel
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"time"

	"github.com/tessera-amt/tessera/internal/jobenv"
	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	reg := runtime.NewRegistry()
	ping := runtime.Register(reg, "faultjob.ping", func(ctx context.Context, v int) (int, error) { return v + 1, nil })
	sum := runtime.Register(reg, "faultjob.sum", func(ctx context.Context, v []float64) (float64, error) {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s, nil
	})
	cfg := runtime.Config{Registry: reg}
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode == "oversize" && os.Getenv(jobenv.VarLocality) == "0" {
		cfg.MaxFrame = 1 << 20
	}
	code := runtime.Main(cfg, func(ctx context.Context, rt *runtime.Runtime) error {
		switch mode {
		case "spin":
			for round := 0; ; round++ {
				for l := range rt.NumLocalities() {
					if _, err := runtime.Async(ctx, rt.Locality(l), ping, round).Get(ctx); err != nil {
						return err
					}
				}
				if round == 10 {
					fmt.Println("ready")
				}
				time.Sleep(time.Millisecond)
			}
		case "wait":
			fmt.Println("ready")
			for {
				if _, err := os.Stat(os.Args[2]); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(10 * time.Millisecond):
				}
			}
			for l := range rt.NumLocalities() {
				if _, err := runtime.Async(ctx, rt.Locality(l), ping, 1).Get(ctx); err != nil {
					return err
				}
			}
			fmt.Println("finished")
			return nil
		case "oversize":
			if rt.Here() == 1 {
				_, err := runtime.Async(ctx, rt.Locality(0), sum, make([]float64, 8<<20)).Get(ctx)
				return err
			}
			<-ctx.Done()
			return context.Cause(ctx)
		}
		return errors.New("unknown mode " + mode)
	})
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	fmt.Printf("total-alloc %d\n", ms.TotalAlloc)
	os.Exit(code)
}
