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
type spinners struct {
	polling atomic.Int32
	kick    chan struct{}
}

// progress would be the port's progress loop; there is none here.
func (*spinners) progress(time.Duration, <-chan struct{}) {}

func newSpinner(time.Duration, *spinners) *spinner { return nil }
