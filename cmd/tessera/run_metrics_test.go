//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRunMetricsAddr(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	opts, err := parseRunArgs([]string{"-n", "3", "--metrics-addr", "127.0.0.1:9100", "prog"}, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if got := optionsEnv(opts)["TESSERA_METRICS_ADDR"]; got != "127.0.0.1:9100" {
		t.Errorf("TESSERA_METRICS_ADDR=%q, want 127.0.0.1:9100", got)
	}
	if _, set := optionsEnv(runOptions{})["TESSERA_METRICS_ADDR"]; set {
		t.Error("TESSERA_METRICS_ADDR set without --metrics-addr")
	}
	for _, c := range []struct{ args, want string }{
		{"-n 2 --metrics-addr 9100 prog", `--metrics-addr "9100" for 2 localities`},
		{"-n 2 --metrics-addr host:http prog", `port "http" is not a number`},
		{"-n 3 --metrics-addr host:65534 prog", "port 65534 + locality 2 is beyond 65535"},
	} {
		stderr.Reset()
		if _, err := parseRunArgs(strings.Fields(c.args), &stderr); err == nil || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("tessera run %s: %v, stderr %q; want an error containing %q", c.args, err, stderr.String(), c.want)
		}
	}
}

// The launcher prints where each locality serves its metrics, and passes
// the address on.
func TestRunPrintsMetricsAddresses(t *testing.T) {
	t.Parallel()
	opts := helperJob(t, 3, "env")
	opts.MetricsAddr = "127.0.0.1:9100"
	code, _, stderr := runHelperJob(t, opts)
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	for i, addr := range []string{"127.0.0.1:9100", "127.0.0.1:9101", "127.0.0.1:9102"} {
		want := "[tessera] locality " + string(rune('0'+i)) + " serves metrics at http://" + addr + "/metrics\n"
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
