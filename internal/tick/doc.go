// Package tick wakes a goroutine at a fixed period without a Go timer.
//
// While any Go timer is pending, the Go scheduler never waits in its
// network poller without a timeout: each time a process goes idle it arms
// a kernel timer for the wait, and each time it wakes it reads the clock to
// run the timers that are due, and a message round trip pays both on
// every wait (by hand on the benchmark machine, a raw Go ping-pong at
// GOMAXPROCS=1: a median of 21.2 µs with one far-off timer pending against
// 20.2 µs without). The parcelports' heartbeats
// and silence checks and the runtime's collective watchdog run on a Ticker
// instead, so that nothing of theirs is pending between ticks: on Linux a
// Ticker is a timerfd that its goroutine reads through the network poller,
// like a socket; elsewhere, or if the descriptor cannot be made, a
// time.Ticker.
package tick
