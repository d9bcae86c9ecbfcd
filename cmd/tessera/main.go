package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: tessera <command> [arguments]

Commands:
  run -n N [--grace D] [--trace DIR] [--profile P] [--parcelport tcp|nbio]
      [--progress block|poll] [--metrics-addr HOST:PORT] [--] prog [args...]
        start N localities of the SPMD program prog on this machine
  trace summary|export|check ARCHIVE
        read a run's OTF2 trace: profile and utilisation, Perfetto
        export, consistency check (tessera trace help)
  info  print the version, build and platform
  help  print this text

Flags of run:
  -n N        number of localities, at least 1 (required)
  --grace D   once a locality has exited with a non-zero status, how long
              to wait for the others to exit by themselves before killing
              them (default 10s)
  --trace DIR          trace the run: the localities write one OTF2
                       archive, DIR/tessera.otf2 (sets TESSERA_TRACE)
  --trace-format F     otf2 (default) or otf2,perfetto: also DIR/trace.json
                       (sets TESSERA_TRACE_FORMAT)
  --profile screen|csv locality 0 prints the run's profile at exit, or
                       writes it to DIR/profile.csv (sets TESSERA_PROFILE)
  --parcelport tcp|nbio
              how the localities talk: Go's net (tcp, the default) or
              github.com/lesismal/nbio (sets TESSERA_PARCELPORT)
  --progress block|poll
              how the localities wait for messages: block in the system's
              poller (the default), or busy-poll as MPI does, which saves
              the wake-up per message but keeps a core busy while waiting
              (sets TESSERA_PROGRESS; tcp parcelport only)
  --bind none|core
              none (the default): the system places the localities; core:
              each is bound to its own block of this machine's cores, or,
              with more localities than cores, consecutive localities share
              one (0 and 1 on the first of 2 cores, 2 and 3 on the second)
  --tcp-congestion NAME
              the TCP congestion control of the localities' connections,
              such as reno (always allowed) or cubic; the default is the
              system's. On a host whose default is bbr, reno streams large
              payloads faster (sets TESSERA_TCP_CONGESTION; tcp parcelport
              only)
  --metrics-addr HOST:PORT
              each locality serves its Prometheus metrics over HTTP:
              locality i at HOST:PORT+i/metrics (port 0: ports of the
              kernel's choosing); the list is printed at start (sets
              TESSERA_METRICS_ADDR)
`

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "info":
		return cmdInfo(args[1:], stdout, stderr)
	case "trace":
		return cmdTrace(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "tessera: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
