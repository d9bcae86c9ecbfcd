package runtime

import (
	"context"
	"errors"
	"github.com/tessera-amt/tessera/internal/jobenv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// startTCPWith starts n localities in this process, each with a copy of
// base (and a test secret unless base has one), talking over TCP on the
// loopback. They are shut down when the test ends.
func startTCPWith(tb testing.TB, n int, base Config) []*Runtime {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the start only
	defer cancel()
	rts := make([]*Runtime, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := base
		cfg.Locality, cfg.NumLocalities, cfg.RootAddr, cfg.ListenHost = uint32(i), uint32(n), ln.Addr().String(), "127.0.0.1"
		if cfg.Secret == nil {
			cfg.Secret = []byte("localities-over-tcp-test-secret")
		}
		if i == 0 {
			cfg.Listener = ln
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rts[i], errs[i] = Start(ctx, cfg)
		}()
	}
	wg.Wait()
	tb.Cleanup(func() {
		for _, rt := range rts {
			if rt != nil {
				rt.shutdown(ErrShutdown)
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	return rts
}

// promtool returns the path of promtool, or skips the test loudly (fails
// it under CI=true) when it is missing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found (Debian package prometheus; scripts/test-deps.sh installs it): the exposition is not checked by Prometheus' own linter"
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", msg)
		}
		t.Skip("SKIPPING: " + msg)
	}
	return p
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), "GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: status %s, %v", addr, resp.Status, err)
	}
	return string(body)
}

// Two localities over TCP serve /metrics; what they serve counts the calls
// made and passes promtool's check. The program's registry gets both
// localities' collectors, and loses them when the localities end.
func TestMetricsEndpoint(t *testing.T) {
	tool := promtool(t)
	reg := NewRegistry()
	echo := Register(reg, "metrics.echo", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	promReg := prometheus.NewPedanticRegistry()
	rts := startTCPWith(t, 2, Config{Registry: reg, MetricsAddr: "127.0.0.1:0", Metrics: promReg})
	ctx := testCtx(t)
	for range 3 {
		if _, err := Async(ctx, rts[0].Locality(1), echo, make([]byte, 1000)).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	body := scrape(t, rts[0].MetricsAddr())
	for _, want := range []string{
		`tessera_calls_sent_total{locality="0"} 3`,
		`tessera_pending_calls{locality="0"} 0`,
		`# TYPE tessera_parcel_bytes_sent_total counter`,
		`tessera_parcels_received_total{locality="0",peer="1"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("locality 0's /metrics lacks %q:\n%s", want, body)
		}
	}
	// 3 calls of 1000 bytes each, plus the rendezvous: more than 3000 bytes.
	m := regexp.MustCompile(`tessera_parcel_bytes_sent_total\{locality="0",peer="1"\} (\d+)`).FindStringSubmatch(body)
	if m == nil || len(m[1]) < 4 {
		t.Errorf("bytes sent to locality 1: %v", m)
	}
	body1 := scrape(t, rts[1].MetricsAddr())
	if !strings.Contains(body1, `tessera_calls_served_total{locality="1"} 3`) {
		t.Errorf("locality 1's /metrics lacks 3 calls served:\n%s", body1)
	}
	for i, b := range []string{body, body1} {
		cmd := exec.Command(tool, "check", "metrics")
		cmd.Stdin = strings.NewReader(b)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on locality %d's /metrics: %v\n%s", i, err, out)
		}
	}

	if n, err := testutil.GatherAndCount(promReg, "tessera_tasks_total"); err != nil || n != 2 {
		t.Fatalf("program's registry: %d tessera_tasks_total series, %v; want one per locality", n, err)
	}
	addr := rts[0].MetricsAddr()
	for _, rt := range rts {
		rt.shutdown(ErrShutdown)
	}
	if n, err := testutil.GatherAndCount(promReg); err != nil || n != 0 {
		t.Errorf("after the job: %d series in the program's registry, %v", n, err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("%s still serves /metrics after the locality ended", addr)
	}
}

func TestMetricsAddrPortPlusLocality(t *testing.T) {
	for _, c := range []struct {
		addr string
		loc  uint32
		want string
	}{
		{"127.0.0.1:9100", 0, "127.0.0.1:9100"},
		{"127.0.0.1:9100", 3, "127.0.0.1:9103"},
		{":9100", 1, ":9101"},
		{"localhost:0", 5, "localhost:0"},
	} {
		if got, err := jobenv.MetricsListenAddr(c.addr, c.loc); err != nil || got != c.want {
			t.Errorf("jobenv.MetricsListenAddr(%q, %d) = %q, %v; want %q", c.addr, c.loc, got, err, c.want)
		}
	}
	for _, bad := range []string{"9100", "host:http", "host:65535x", "host:65535"} {
		if got, err := jobenv.MetricsListenAddr(bad, 1); err == nil {
			t.Errorf("jobenv.MetricsListenAddr(%q, 1) = %q, want an error", bad, got)
		}
	}
}

// A bad metrics address fails Start with an error that names the locality
// and the address.
func TestMetricsBadAddress(t *testing.T) {
	_, err := StartLocal(testCtx(t), 2, Config{MetricsAddr: "no-port-here"})
	if err == nil || !strings.Contains(err.Error(), "locality 0") || !strings.Contains(err.Error(), `"no-port-here"`) {
		t.Fatalf("Start with a bad metrics address: %v", err)
	}
}
