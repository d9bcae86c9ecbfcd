package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// usage is the text of tessera help. The synopsis and the flags of run
// come from run's flag set (run_flags.go), so that they list every flag.
func usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, `usage: tessera <command> [arguments]

Commands:
  %s
        start N localities of the SPMD program prog on this machine
  trace summary|export|check ARCHIVE
        read a run's OTF2 trace: profile and utilisation, Perfetto
        export, consistency check (tessera trace help)
  info  print the version, build and platform
  help  print this text

`, runSynopsis(72, "      "))
	runFlagsHelp(&b)
	return b.String()
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
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
		fmt.Fprint(stdout, usage())
		return 0
	default:
		fmt.Fprintf(stderr, "tessera: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
}
