//go:build !linux

package sockopt

import "fmt"

// SetCongestion fails: choosing a connection's congestion control
// (TCP_CONGESTION) is Linux's.
func SetCongestion(_ any, name string) error {
	return fmt.Errorf("TCP congestion control %q: not settable on this system (TCP_CONGESTION is Linux's)", name)
}
