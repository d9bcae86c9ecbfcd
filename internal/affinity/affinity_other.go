//go:build !linux

package affinity

import "errors"

// Supported says whether this system can bind processes to CPUs.
const Supported = false

// Allowed fails: this system cannot bind processes to CPUs.
func Allowed() ([]int, error) { return nil, errors.New("not supported on this system") }

// StartOn runs start unbound: this system cannot bind processes to CPUs.
func StartOn(_ []int, start func() error) error { return start() }
