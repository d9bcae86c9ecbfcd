//go:build !linux

package trace

import (
	"errors"
	"time"
)

// Without /proc the process metrics are not read: they are written as 0.
var errNoProc = errors.New("trace: process metrics need Linux's /proc")

func processCPU() (time.Duration, error) { return 0, errNoProc }

func processRSS() (uint64, error) { return 0, errNoProc }
