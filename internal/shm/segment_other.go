//go:build !linux

package shm

import (
	"errors"
	"runtime"
)

func unsupported() error { return errors.New("shm: no shared segments on " + runtime.GOOS) }

// New fails: segments need Linux's memfd and /proc.
func New(n int) (*Segment, error) { return nil, unsupported() }

// Map fails: segments need Linux's memfd and /proc.
func Map(d Desc) (*Segment, error) { return nil, unsupported() }

// Close does nothing: no segment exists here.
func (s *Segment) Close() error { return nil }

// Supported tells whether this system has segments.
const Supported = false

// Node returns "": without segments no two processes share memory.
func Node() string { return "" }
