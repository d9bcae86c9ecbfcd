package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// result is what one in-process run gives: the whole input, kernel and
// output, gathered on locality 0.
type result struct {
	x, k, y primitives.Whole
	tiles   []annotate.Block // each locality's owned output block
}

// runLocal runs convolve on n in-process localities and gathers everything.
func runLocal(t *testing.T, n int, o options) (result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var res result
	res.tiles = make([]annotate.Block, n)
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		x, y, err := convolve(ctx, e, o)
		if err != nil {
			return err
		}
		xw, err := primitives.AllGather(ctx, e, runtime.MakeReady(x)).Get(ctx)
		if err != nil {
			return err
		}
		yw, err := primitives.AllGather(ctx, e, runtime.MakeReady(y)).Get(ctx)
		if err != nil {
			return err
		}
		kw, err := kernel(ctx, e, o, x.Shape()[2]).Get(ctx)
		if err != nil {
			return err
		}
		res.tiles[e.Locality()] = y.OwnedBlock()
		if e.Locality() == 0 {
			res.x, res.y, res.k = xw, yw, kw
		}
		return nil
	})
	return res, err
}

// reference is conv1d written out: Keras' Conv1D without bias.
func reference(x, k primitives.Whole, o options) primitives.Whole {
	pages, steps, cin := x.Shape[0], x.Shape[1], x.Shape[2]
	ks, cout := k.Shape[0], k.Shape[2]
	span := (ks-1)*o.dilation + 1
	var outSteps, padLeft int
	switch o.padding {
	case primitives.PadValid:
		outSteps = (steps-span)/o.stride + 1
	case primitives.PadSame:
		outSteps = (steps + o.stride - 1) / o.stride
		padTotal := max((outSteps-1)*o.stride+span-steps, 0)
		padLeft = padTotal / 2
	case primitives.PadCausal:
		outSteps = (steps + o.stride - 1) / o.stride
		padLeft = span - 1
	}
	y := primitives.Whole{Shape: []int{pages, outSteps, cout}, Data: make([]float64, pages*outSteps*cout)}
	for b := range pages {
		for t := range outSteps {
			for oc := range cout {
				s := 0.0
				for kk := range ks {
					in := t*o.stride + kk*o.dilation - padLeft
					if in < 0 || in >= steps {
						continue
					}
					for c := range cin {
						s += x.Data[(b*steps+in)*cin+c] * k.Data[(kk*cin+c)*cout+oc]
					}
				}
				y.Data[(b*outSteps+t)*cout+oc] = s
			}
		}
	}
	return y
}

func TestConvolutionMatchesReference(t *testing.T) {
	dir := t.TempDir()
	base := options{samples: 7, steps: 20, features: 3, filters: 4, kernelSize: 5, stride: 1, dilation: 1, seed: 9, padding: primitives.PadValid}
	base.input = filepath.Join(dir, "in.csv")
	if err := writeInput(base.input, base); err != nil {
		t.Fatal(err)
	}
	variants := []func(o *options){
		func(o *options) {},
		func(o *options) { o.padding = primitives.PadSame },
		func(o *options) { o.padding = primitives.PadCausal },
		func(o *options) { o.stride = 2 },
		func(o *options) { o.dilation = 3; o.padding = primitives.PadSame },
		func(o *options) { o.stride = 3; o.dilation = 2; o.padding = primitives.PadCausal },
	}
	for n := 1; n <= 3; n++ {
		for _, change := range variants {
			o := base
			change(&o)
			t.Run(fmt.Sprintf("%d-localities/%s-stride%d-dilation%d", n, o.padding, o.stride, o.dilation), func(t *testing.T) {
				res, err := runLocal(t, n, o)
				if err != nil {
					t.Fatal(err)
				}
				want := reference(res.x, res.k, o)
				if fmt.Sprint(res.y.Shape) != fmt.Sprint(want.Shape) {
					t.Fatalf("shape %v, want %v", res.y.Shape, want.Shape)
				}
				for i := range want.Data {
					if d := math.Abs(res.y.Data[i]-want.Data[i]) / math.Max(1, math.Abs(want.Data[i])); d > 1e-12 {
						t.Fatalf("element %d: %.17g, reference %.17g", i, res.y.Data[i], want.Data[i])
					}
				}
				// The output keeps the input's page tiling.
				tiling, _ := annotate.New(annotate.Page, want.Shape, n)
				for l, b := range res.tiles {
					if !b.Equal(tiling.Tiles[l].Owned) {
						t.Errorf("locality %d holds %v, want the page tile %v", l, b, tiling.Tiles[l].Owned)
					}
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
		{[]string{}, "exactly one of --input FILE and --make-input FILE"},
		{[]string{"--input", "a", "--padding", "full"}, `--padding "full": want valid, same or causal`},
		{[]string{"--input", "a", "--stride", "0"}, "--stride 0"},
		{[]string{"--input", "a", "--filters", "0"}, "--filters 0"},
		{[]string{"--input", "a", "--bound", "-1"}, "--bound -1"},
		{[]string{"--input", "a", "extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseOptions(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestProcessListing2 runs the paper's example as 2 real processes: a
// (2000, 80, 3) batch read with page tiling, 100 filters of length 10,
// valid padding: output (2000, 71, 100), 1000 pages on each locality,
// and each locality prints Listing 3's annotation.
func TestProcessListing2(t *testing.T) {
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/tessera-amt/tessera/cmd/tessera", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tessera, conv := filepath.Join(bin, "tessera"), filepath.Join(bin, "conv1d")
	// --help is a request, not an error: exit 0 and the flags listed.
	if out, err := exec.Command(conv, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "-make-input") {
		t.Errorf("conv1d --help: %v, output:\n%s\nwant exit 0 and the flags", err, out)
	}
	input := filepath.Join(t.TempDir(), "HAR.csv")
	if out, err := exec.Command(conv, "--make-input", input).CombinedOutput(); err != nil {
		t.Fatalf("--make-input: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tessera, "run", "-n", "2", conv, "--input", input).CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run -n 2 conv1d: %v\n%s", err, out)
	}
	for l := range 2 {
		listing3 := fmt.Sprintf(`[L%d] annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", %d, 2], ["name", "HAR_csv_1/0"])`, l, l)
		pages := fmt.Sprintf("[L%d] conv1d_d output on locality %d: shape [2000 71 100], local pages [%d, %d)", l, l, 1000*l, 1000*(l+1))
		for _, want := range []string{listing3, pages} {
			if !strings.Contains(string(out), want) {
				t.Errorf("no line %q in:\n%s", want, out)
			}
		}
	}

	// Bad input ends the job with a message naming the problem.
	ragged := filepath.Join(t.TempDir(), "ragged.csv")
	os.WriteFile(ragged, []byte("1,2,3\n4,5,6\n7,8\n9,1,2\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", filepath.Join(bin, "absent.csv")}, "absent.csv"},
		{[]string{"--input", ragged, "--steps", "2"}, "ragged.csv"},
		{[]string{"--input", input, "--padding", "full"}, `--padding "full"`},
	} {
		out, err := exec.CommandContext(ctx, tessera, append([]string{"run", "-n", "2", conv}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("conv1d %q: %v, output:\n%s\nwant a failure naming %q", c.args, err, out, c.want)
		}
	}
}
