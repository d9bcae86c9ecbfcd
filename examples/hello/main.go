// Command hello is the smallest Tessera program: every locality calls an
// action on every locality (itself included), chains the replies with
// WhenAll and Then, and prints what it heard in one line that starts
// "locality N of M". The same binary runs under `tessera run -n 4` and
// under `srun -n 4`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	// No flags of its own; -help says so and how to run it.
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: tessera run -n N hello   (or srun -n N hello): every locality greets every locality; no flags")
	}
	flag.Parse()
	reg := runtime.NewRegistry()
	greet := runtime.Register(reg, "hello.greet", func(ctx context.Context, from uint32) (string, error) {
		host, _ := os.Hostname()
		return fmt.Sprintf("L%d@%s/%d", runtime.FromContext(ctx).Here(), host, os.Getpid()), nil
	})

	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		replies := make([]*runtime.Future[string], rt.NumLocalities())
		for l := range rt.NumLocalities() {
			replies[l] = runtime.Async(ctx, rt.Locality(l), greet, rt.Here())
		}
		line := runtime.Then(ctx, runtime.WhenAll(replies...), func(ctx context.Context, heard []string) (string, error) {
			return fmt.Sprintf("locality %d of %d heard %d replies: %s",
				rt.Here(), rt.NumLocalities(), len(heard), strings.Join(heard, " ")), nil
		})
		s, err := line.Get(ctx)
		if err != nil {
			return err
		}
		fmt.Println(s)
		return nil
	}))
}
