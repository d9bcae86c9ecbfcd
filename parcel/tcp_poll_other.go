//go:build !unix

package parcel

import (
	"sync/atomic"
	"time"
)

// spinner is not available here: readers block (TCPConfig.PollFor is
// ignored).
type spinner struct{}

func newSpinner(time.Duration, *atomic.Int32) *spinner { return nil }
