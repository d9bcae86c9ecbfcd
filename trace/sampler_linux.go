package trace

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/self/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// processCPU is the CPU time (user and system) the process has used, from
// /proc/self/stat.
func processCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// the last ')'. utime and stime are fields 14 and 15 of the line, 12 and
	// 13 after the name.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("trace: /proc/self/stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, errors.New("trace: /proc/self/stat: too few fields")
	}
	u, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	s, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

// processRSS is the process's resident set size in bytes, from
// /proc/self/statm.
func processRSS() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errors.New("trace: /proc/self/statm: too few fields")
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * uint64(os.Getpagesize()), nil
}
