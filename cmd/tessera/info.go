package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/primitives"
)

// version is the version of Tessera this command belongs to.
const version = "0.1.0-dev"

// cmdInfo is the info subcommand.
func cmdInfo(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "tessera info: unexpected argument %q\nusage: tessera info\n", args[0])
		return 2
	}
	writeInfo(stdout)
	return 0
}

// writeInfo prints the version, the build and the platform, one
// "name  value" pair per line.
func writeInfo(w io.Writer) {
	line := func(name, value string) { fmt.Fprintf(w, "%-11s %s\n", name, value) }

	line("tessera", version)
	tags := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		line("module", strings.TrimSpace(bi.Main.Path+" "+bi.Main.Version))
		if vcs := settings["vcs"]; vcs != "" {
			v := strings.TrimSpace(vcs + " " + settings["vcs.revision"] + " " + settings["vcs.time"])
			if settings["vcs.modified"] == "true" {
				v += " (modified)"
			}
			line("vcs", v)
		}
		if cgo, ok := settings["CGO_ENABLED"]; ok {
			line("cgo", cgo)
		}
		tags = settings["-tags"]
	}
	if tags == "" {
		tags = "none"
	}
	line("build tags", tags)
	openblas := "off"
	if openblasTag {
		openblas = "on"
	}
	line("openblas", openblas)
	line("blas", primitives.BLAS())
	port := "shm (default): shared memory to localities on this machine, tcp to others"
	if !shm.Supported {
		port = "shm (default): tcp to every locality, this system has no shared segments"
	}
	line("parcelport", port)
	ucx := "off (rebuild with -tags ucx; needs libucx-dev)"
	if parcel.UCXBuiltIn {
		ucx = "on, UCX " + parcel.UCXVersion()
	}
	line("ucx", ucx)
	line("go", runtime.Version())
	line("platform", runtime.GOOS+"/"+runtime.GOARCH)
	line("gomaxprocs", fmt.Sprint(runtime.GOMAXPROCS(0)))
}
