//go:build !linux

package parcel

import "fmt"

// setCongestion: choosing a connection's congestion control is Linux's.
func setCongestion(_ any, name string) error {
	return fmt.Errorf("parcel: TCP congestion control %q: not settable on this system", name)
}
