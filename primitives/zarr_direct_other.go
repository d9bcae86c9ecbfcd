//go:build !linux

package primitives

import "os"

// readDirect never reads where O_DIRECT and cachestat(2) are not used:
// the caller reads the file as usual.
func readDirect(*os.File, []byte) (bool, error) { return false, nil }
