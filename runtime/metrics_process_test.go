package runtime

import (
	mrand "math/rand/v2"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var metricsjob = &testProgram{name: "metricsjob"}

// freePorts returns a port p such that p and the n-1 ports after it were
// free a moment ago. It looks below Linux's default ephemeral range
// (32768-60999), from which the job's own listeners and connections take
// their ports, so that none of them can take one of these meanwhile.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		p := 10000 + mrand.IntN(20000-n)
		lns := make([]net.Listener, 0, n)
		ok := true
		for i := range n {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatalf("found no %d consecutive free ports", n)
	return 0
}

// Three processes with TESSERA_METRICS_ADDR=127.0.0.1:p: locality i serves
// /metrics on p+i, its metrics count the calls it served, and promtool
// accepts what it serves.
func TestProcessMetricsEndpoints(t *testing.T) {
	tool := promtool(t)
	const n = 3
	port := freePorts(t, n)
	t.Setenv("TESSERA_METRICS_ADDR", "127.0.0.1:"+strconv.Itoa(port))
	job := startProcesses(t, metricsjob, n)
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(60 * time.Second):
			t.Fatalf("locality %d still running after 60 s; stderr:\n%s", i, p.Stderr)
		}
		if code := p.ExitCode(); code != 0 {
			t.Fatalf("locality %d exited %d; stderr:\n%s", i, code, p.Stderr)
		}
	}
	out := job.Procs[0].Stdout.String()
	parts := regexp.MustCompile(`(?m)^=== locality (\d+) (\S+)\n`).Split(out, -1)[1:]
	heads := regexp.MustCompile(`(?m)^=== locality (\d+) (\S+)$`).FindAllStringSubmatch(out, -1)
	if len(heads) != n || len(parts) != n {
		t.Fatalf("locality 0 printed the metrics of %d localities, want %d:\n%s", len(heads), n, out)
	}
	for i, h := range heads {
		if want := "127.0.0.1:" + strconv.Itoa(port+i); h[1] != strconv.Itoa(i) || h[2] != want {
			t.Errorf("locality %s serves metrics at %s, want locality %d at %s", h[1], h[2], i, want)
		}
		body := parts[i]
		// 5 echo calls and the call asking for the address.
		served := `tessera_calls_served_total{locality="` + strconv.Itoa(i) + `"} 6` + "\n"
		if i == 0 {
			// Fetched first: the 10 echo calls; asking itself is no parcel.
			served = `tessera_calls_sent_total{locality="0"} 10` + "\n"
		}
		if !strings.Contains(body, served) {
			t.Errorf("locality %d's /metrics lacks %q:\n%s", i, served, body)
		}
		cmd := exec.Command(tool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on locality %d's /metrics: %v\n%s", i, err, msg)
		}
	}
	for i, p := range job.Procs {
		if !strings.Contains(p.Stderr.String(), "serving metrics") {
			t.Errorf("locality %d did not log its metrics address; stderr:\n%s", i, p.Stderr)
		}
	}
}
