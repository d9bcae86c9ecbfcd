//go:build unix && !linux

package parcel

import "errors"

// osYield does nothing where there is no sched_yield to call.
func osYield() {}

// epollSet has no epoll to wait in here: the progress loop hands its
// readers to the network poller once its window passes.
type epollSet struct{ fd int }

func (*epollSet) open() bool                     { return false }
func (*epollSet) arm(int)                        {}
func (*epollSet) wait(int, []int) ([]int, error) { return nil, errors.ErrUnsupported }
func (*epollSet) close()                         {}
