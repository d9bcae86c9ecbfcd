package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// runFlags defines the flags of run on fs, each setting its field of o.
// The usage of run (runSynopsis, runFlagsHelp) is made from these
// definitions: a flag's usage text names its argument in backquotes, as
// flag.UnquoteUsage reads it; "`ARG`: " at its start is not repeated in
// the help.
func runFlags(fs *flag.FlagSet, o *runOptions) {
	fs.IntVar(&o.N, "n", 0, "start `N` localities, at least 1 (required)")
	fs.DurationVar(&o.Grace, "grace", 10*time.Second,
		"once a locality has exited with a non-zero status, wait up to `D` for the others to exit by themselves before killing them")
	fs.StringVar(&o.TraceDir, "trace", "",
		"trace the run: the localities write one OTF2 archive, `DIR`/tessera.otf2; DIR must be new or empty (sets TESSERA_TRACE)")
	fs.StringVar(&o.TraceFormat, "trace-format", "",
		"`otf2|otf2,perfetto`: the timelines to write with --trace; otf2,perfetto also writes DIR/trace.json (sets TESSERA_TRACE_FORMAT)")
	fs.StringVar(&o.Profile, "profile", "",
		"`screen|csv`: locality 0 prints the run's profile at exit, or writes it to DIR/profile.csv (sets TESSERA_PROFILE)")
	fs.StringVar(&o.Parcelport, "parcelport", "",
		"`shm|tcp|nbio|ucx`: how the localities talk: shared memory with localities on the same node and Go's net to others (shm, the default), Go's net to all (tcp), github.com/lesismal/nbio, or UCX active messages in a build with -tags ucx (sets TESSERA_PARCELPORT)")
	fs.StringVar(&o.Progress, "progress", "",
		"`block|poll`: how the localities wait for messages: block in the system's poller (the default), or busy-poll as MPI does, which saves the wake-up per message but keeps a core busy while waiting (sets TESSERA_PROGRESS; not with nbio)")
	fs.StringVar(&o.Bind, "bind", "",
		"`none|core`: none (the default): the system places the localities; core: each is bound to its own block of this machine's cores, or, with more localities than cores, consecutive localities share one")
	fs.StringVar(&o.TCPCongestion, "tcp-congestion", "",
		"the TCP congestion control `NAME` of the localities' connections, such as reno (always allowed) or cubic; the default is the system's. On a host whose default is bbr, reno streams large payloads faster (sets TESSERA_TCP_CONGESTION; the tcp connections of the shm and tcp parcelports)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "",
		"each locality serves its Prometheus metrics over HTTP: locality i at `HOST:PORT`+i/metrics (port 0: ports of the kernel's choosing); the list is printed at start (sets TESSERA_METRICS_ADDR)")
	fs.BoolVar(&o.Verbose, "verbose", false,
		"when the job fails, show what every locality reports and when each exits, besides the summary of the launcher, which otherwise reports the root cause once")
}

// newRunFlagSet returns run's flag set, writing to o.
func newRunFlagSet(o *runOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("tessera run", flag.ContinueOnError)
	runFlags(fs, o)
	return fs
}

// flagName is how the usage writes a flag: -n, --grace.
func flagName(f *flag.Flag) string {
	if len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// flagWithArg is a flag with its argument: "-n N", "--verbose".
func flagWithArg(f *flag.Flag) string {
	arg, _ := flag.UnquoteUsage(f)
	if isBool(f) {
		return flagName(f)
	}
	return flagName(f) + " " + arg
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runSynopsis is the synopsis of run: "run -n N [--bind none|core] ...
// [--] prog [args...]", wrapped after width columns with the lines after
// the first indented by indent.
func runSynopsis(width int, indent string) string {
	var o runOptions
	fs := newRunFlagSet(&o)
	words := []string{"run", flagWithArg(fs.Lookup("n"))}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "n" {
			words = append(words, "["+flagWithArg(f)+"]")
		}
	})
	words = append(words, "[--]", "prog", "[args...]")
	return wrap(words, width, indent)
}

// runFlagsHelp writes every flag of run with what it does.
func runFlagsHelp(w io.Writer) {
	var o runOptions
	fs := newRunFlagSet(&o)
	fmt.Fprintln(w, "Flags of run:")
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		help = strings.TrimPrefix(help, arg+": ") // said on the flag's line
		if f.DefValue != "" && !isBool(f) && f.DefValue != "0" {
			help += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %s\n        %s\n", flagWithArg(f), wrap(strings.Fields(help), 72, "        "))
	})
}

// wrap joins words with spaces into lines of at most width columns (a
// longer word has a line of its own), the lines after the first starting
// with indent. The first line is taken to start at the same column.
func wrap(words []string, width int, indent string) string {
	var b strings.Builder
	col := len(indent)
	for i, w := range words {
		switch {
		case i == 0:
		case col+1+len(w) > width:
			b.WriteString("\n" + indent)
			col = len(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}
