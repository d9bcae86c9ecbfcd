//go:build !linux

package tick

import (
	"os"
	"time"
)

// timerFile returns nil: without a timerfd a Ticker is a time.Ticker.
func timerFile(time.Duration) *os.File { return nil }
