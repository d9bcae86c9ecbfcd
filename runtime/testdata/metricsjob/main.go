// Command metricsjob is a Tessera SPMD program for the runtime's
// real-process metrics test. Every locality serves /metrics
// (TESSERA_METRICS_ADDR). Locality 0 calls an echo action 5 times on every
// other locality, then asks each locality for its metrics address, fetches
// its /metrics over HTTP and prints it after a line
//
//	=== locality N ADDR
//
// The others keep serving until locality 0 is done (Finalize).
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	reg := runtime.NewRegistry()
	echo := runtime.Register(reg, "metricsjob.echo", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	addr := runtime.Register(reg, "metricsjob.addr", func(ctx context.Context, _ struct{}) (string, error) {
		return runtime.FromContext(ctx).MetricsAddr(), nil
	})
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		if rt.Here() != 0 {
			return nil
		}
		for i := uint32(1); i < rt.NumLocalities(); i++ {
			for range 5 {
				if _, err := runtime.Async(ctx, rt.Locality(i), echo, make([]byte, 100)).Get(ctx); err != nil {
					return err
				}
			}
		}
		for i := range rt.NumLocalities() {
			a, err := runtime.Async(ctx, rt.Locality(i), addr, struct{}{}).Get(ctx)
			if err != nil {
				return err
			}
			if a == "" {
				return fmt.Errorf("locality %d serves no metrics", i)
			}
			body, err := fetch(ctx, "http://"+a+"/metrics")
			if err != nil {
				return fmt.Errorf("locality %d's metrics: %w", i, err)
			}
			fmt.Printf("=== locality %d %s\n%s", i, a, body)
		}
		return nil
	}))
}

func fetch(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
