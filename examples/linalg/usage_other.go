//go:build !unix

package main

// usage is this process's resource use, which this system does not report.
type usage struct{}

func readUsage() usage { return usage{} }

func (usage) String() string { return "resource use not reported on this system" }

func (u usage) minus(usage) usage { return u }
