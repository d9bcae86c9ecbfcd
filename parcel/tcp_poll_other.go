//go:build !unix

package parcel

import (
	"sync/atomic"
	"time"
)

// spinner is not available here: readers block (TCPConfig.PollFor is
// ignored).
type spinner struct{}

// spinners is what the spinning readers of a port would share.
type spinners struct{ polling atomic.Int32 }

func newSpinner(time.Duration, *spinners) *spinner { return nil }
