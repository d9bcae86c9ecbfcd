package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tessera-amt/tessera/trace"
)

const traceUsage = `usage: tessera trace <command> [flags] ARCHIVE

ARCHIVE is a run's trace directory (holding one *.otf2 archive) or the
archive's anchor file.

Commands:
  summary [-per-locality] [-csv FILE] ARCHIVE
        the utilisation of each locality (busy time / (wall time x lanes))
        and the profile of the run: per task name the count, total, mean,
        min and max time and the share of wall time x lanes
  export --format perfetto [-o FILE] ARCHIVE
        write the trace as Chrome trace-event JSON for the Perfetto UI
        (ui.perfetto.dev) or chrome://tracing; to stdout without -o
  check ARCHIVE
        check the archive: time order per location, matched Enter/Leave,
        every reference defined, every parent GUID a task of the run (or 0);
        exits 1 listing the problems
`

// checkListed is how many problems trace check prints at most.
const checkListed = 100

// cmdTrace is the trace subcommand.
func cmdTrace(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, traceUsage)
		return 2
	}
	switch args[0] {
	case "summary":
		return cmdTraceSummary(args[1:], stdout, stderr)
	case "export":
		return cmdTraceExport(args[1:], stdout, stderr)
	case "check":
		return cmdTraceCheck(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, traceUsage)
		return 0
	}
	fmt.Fprintf(stderr, "tessera trace: unknown command %q\n\n%s", args[0], traceUsage)
	return 2
}

// parseTraceArgs parses flags that may come before or after the one
// ARCHIVE argument, and returns the archive.
func parseTraceArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (string, error) {
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, traceUsage) }
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "tessera trace %s: want one ARCHIVE argument, got %d %q\n", fs.Name(), len(pos), pos)
		return "", errors.New("bad arguments")
	}
	return pos[0], nil
}

// readTrace finds and reads the archive at path.
func readTrace(path string) (*trace.OTF2Archive, error) {
	anchor, err := trace.FindOTF2(path)
	if err != nil {
		return nil, err
	}
	return trace.ReadOTF2(anchor)
}

// usageStatus is the exit status for a flag parsing error.
func usageStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func cmdTraceSummary(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	perLocality := fs.Bool("per-locality", false, "also print the profile of each locality")
	csvPath := fs.String("csv", "", "write the profiles of the localities and of the run to `FILE` as CSV")
	path, err := parseTraceArgs(fs, args, stderr)
	if err != nil {
		return usageStatus(err)
	}
	a, err := readTrace(path)
	if err != nil {
		fmt.Fprintf(stderr, "tessera trace summary: %v\n", err)
		return 1
	}
	var out bytes.Buffer
	if err := trace.WriteSummary(&out, a, *perLocality); err != nil {
		fmt.Fprintf(stderr, "tessera trace summary: %v\n", err)
		return 1
	}
	if *csvPath != "" {
		per, all, err := trace.ProfileFromOTF2(a)
		if err == nil {
			err = writeFile(*csvPath, func(w io.Writer) error { return trace.WriteProfilesCSV(w, per, all) })
		}
		if err != nil {
			fmt.Fprintf(stderr, "tessera trace summary: %v\n", err)
			return 1
		}
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "tessera trace summary: %v\n", err)
		return 1
	}
	return 0
}

func cmdTraceExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "", "output format: perfetto (required)")
	outPath := fs.String("o", "", "write to `FILE` instead of stdout")
	path, err := parseTraceArgs(fs, args, stderr)
	if err != nil {
		return usageStatus(err)
	}
	if *format != "perfetto" {
		fmt.Fprintf(stderr, "tessera trace export: --format must be perfetto, not %q\n", *format)
		return 2
	}
	a, err := readTrace(path)
	if err != nil {
		fmt.Fprintf(stderr, "tessera trace export: %v\n", err)
		return 1
	}
	write := func(w io.Writer) error { return trace.WritePerfetto(w, a) }
	if *outPath != "" {
		err = writeFile(*outPath, write)
	} else {
		err = write(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tessera trace export: %s: %v\n", a.Path, err)
		return 1
	}
	return 0
}

func cmdTraceCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	path, err := parseTraceArgs(fs, args, stderr)
	if err != nil {
		return usageStatus(err)
	}
	a, err := readTrace(path)
	if err != nil {
		fmt.Fprintf(stderr, "tessera trace check: %v\n", err)
		return 1
	}
	problems := trace.CheckOTF2(a)
	if len(problems) == 0 {
		events := 0
		for _, evs := range a.Events {
			events += len(evs)
		}
		fmt.Fprintf(stdout, "%s: sound (%d locations, %d events)\n", a.Path, len(a.Locations), events)
		return 0
	}
	fmt.Fprintf(stderr, "%s: %d problem(s):\n", a.Path, len(problems))
	for i, p := range problems {
		if i == checkListed {
			fmt.Fprintf(stderr, "  ... and %d more\n", len(problems)-checkListed)
			break
		}
		fmt.Fprintf(stderr, "  %s\n", p)
	}
	return 1
}

// writeFile writes a file with write; the file does not stay behind when
// that fails.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
