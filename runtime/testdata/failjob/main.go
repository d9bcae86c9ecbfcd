// Command failjob is a Tessera program for the runtime's process tests of
// failure reports: once the job has started, the locality named by its
// argument returns an error from its body; the others wait for the job to
// end.
//
//	failjob L
package main

import (
	"context"
	"errors"
	"os"
	"strconv"

	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	fail, _ := strconv.Atoi(os.Args[1])
	os.Exit(runtime.Main(runtime.Config{}, func(ctx context.Context, rt *runtime.Runtime) error {
		if int(rt.Here()) == fail {
			return errors.New(`input.csv line 7: column 2: "abc" is not an integer`)
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}))
}
