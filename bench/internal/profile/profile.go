// Package profile starts the CPU profiles of the benchmark programs: one
// file per locality, so that the localities of one job do not overwrite
// each other's.
package profile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start writes a CPU profile of this process to path.L<locality> until the
// returned stop is called. An empty path profiles nothing.
func Start(path string, locality uint32) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.L%d", path, locality))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
