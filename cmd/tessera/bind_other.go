//go:build !linux

package main

import "errors"

func allowedCPUs() ([]int, error) { return nil, errors.New("not supported on this system") }

func startOnCPUs(_ []int, start func() error) error { return start() }

const bindSupported = false
