// Package sockopt sets the socket options that Tessera's TCP parcelport
// and its benchmarks' raw baselines share, so that both set them the same
// way: today the TCP congestion control of a connection or listener.
package sockopt
