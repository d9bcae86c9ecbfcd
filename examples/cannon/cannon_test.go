package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// TestProductMatchesReference runs the program's body on 1 to 5 in-process
// localities (Cannon on 1 and 4, SUMMA otherwise) with an order that does
// not divide evenly, checking against one gonum product.
func TestProductMatchesReference(t *testing.T) {
	for n := 1; n <= 5; n++ {
		for _, tiling := range []string{"sym", "row"} {
			t.Run(fmt.Sprintf("%d-localities-%s", n, tiling), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				reg := runtime.NewRegistry()
				acts := primitives.Register(reg, agas.New(reg))
				job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				o := options{n: 37, repeat: 2, seed: 3, check: true, tiling: tiling, tolerance: 1e-12}
				err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
					e, err := primitives.NewEnv(rt, acts)
					if err != nil {
						return err
					}
					defer e.Close()
					var out io.Writer = io.Discard
					worst, err := run(ctx, e, o, out)
					if err == nil && e.Locality() == 0 && worst > 1e-12 {
						err = fmt.Errorf("difference %g", worst)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n 0"},
		{[]string{"--tiling", "page"}, `--tiling "page"`},
		{[]string{"--repeat", "0"}, "--repeat 0"},
		{[]string{"x"}, `unexpected argument "x"`},
	} {
		_, err := parseOptions(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestProcessCannon runs the program as 4 real processes (Cannon on a
// 2 x 2 grid) with the check on.
func TestProcessCannon(t *testing.T) {
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/tessera-amt/tessera/cmd/tessera", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// --help is a request, not an error: exit 0 and the flags listed.
	if out, err := exec.Command(filepath.Join(bin, "cannon"), "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "-check") {
		t.Errorf("cannon --help: %v, output:\n%s\nwant exit 0 and the flags", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "tessera"), "run", "-n", "4", filepath.Join(bin, "cannon"), "-n", "301", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run -n 4 cannon: %v\n%s", err, out)
	}
	for _, want := range []string{"[L0] cannon: 301 x 301 product, Cannon on 4 localities", "[L0] cannon: checked against one gonum product"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if !shm.Supported {
		t.Log("no shared segments on this system: the lending run is left out")
		return
	}
	// Tiles of 4 MiB and more are lent between the processes, not copied:
	// locality 0 lends its A and B tiles once per product (two products).
	out, err = exec.CommandContext(ctx, filepath.Join(bin, "tessera"), "run", "-n", "4", filepath.Join(bin, "cannon"), "-n", "1450", "--repeat", "2", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run -n 4 cannon -n 1450: %v\n%s", err, out)
	}
	for _, want := range []string{"[L0] cannon: checked against one gonum product", "[L0] cannon: locality 0 lent 16.0 MiB of tiles"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if m := regexp.MustCompile(`largest relative difference (\S+)`).FindStringSubmatch(string(out)); m == nil {
		t.Errorf("no difference reported in:\n%s", out)
	} else if d, err := strconv.ParseFloat(m[1], 64); err != nil || d > 1e-12 {
		t.Errorf("largest relative difference %s, want at most 1e-12", m[1])
	}
}
