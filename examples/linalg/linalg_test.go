package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// TestRunAll runs every factorisation on 1 to 4 in-process localities with
// sizes that do not divide by the block, and checks the residuals the
// program measured.
func TestRunAll(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			reg := runtime.NewRegistry()
			acts := primitives.Register(reg, agas.New(reg))
			job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-n", "37", "--nb", "5", "-m", "101", "--cols", "9", "--rank", "3", "--baseline"}
			if n == 4 {
				args = append(args, "--grid2d")
			}
			o, err := parseOptions(args, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
				e, err := primitives.NewEnv(rt, acts)
				if err != nil {
					return err
				}
				defer e.Close()
				var w bytes.Buffer
				res, err := run(ctx, e, o, &w)
				if err != nil {
					return err
				}
				if e.Locality() == 0 {
					out = w
					for _, k := range []string{"cholesky", "lu", "qr", "qr-orthogonality", "tsqr", "orthogonality", "svd"} {
						if _, ok := res[k]; !ok {
							return fmt.Errorf("no %s residual measured", k)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"BenchmarkCholesky/n=37/nb=5/localities=", "BenchmarkLU/", "BenchmarkQR/", "BenchmarkTSQR/", "BenchmarkTruncatedSVD/", "BenchmarkDpotrf/n=37 1 ", "‖A − LLᵀ‖/‖A‖ = "} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n 0"},
		{[]string{"--ops", "cholesky,qz"}, `unknown factorisation "qz"`},
		{[]string{"--grid", "2by2"}, `--grid "2by2"`},
		{[]string{"-m", "3", "--cols", "4"}, "tall-skinny"},
		{[]string{"--rank", "0"}, "--rank 0"},
		{[]string{"x"}, `unexpected argument "x"`},
	} {
		_, err := parseOptions(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	if _, _, err := grid(options{gridP: 2, gridQ: 2}, 3); err == nil || !strings.Contains(err.Error(), "the job 3 localities") {
		t.Errorf("a 2x2 grid on 3 localities: %v", err)
	}
	if p, q, _ := grid(options{}, 6); p != 2 || q != 3 {
		t.Errorf("grid of 6: %dx%d, want 2x3", p, q)
	}
}

// TestHelpExitsZero builds the program and runs it with --help.
func TestHelpExitsZero(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "linalg")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("linalg --help: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-nb") {
		t.Errorf("--help printed no flags:\n%s", out)
	}
}
