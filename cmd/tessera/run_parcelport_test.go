package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRunParcelport(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	for _, c := range []struct {
		args []string
		want string // TESSERA_PARCELPORT set for the localities; "" none
	}{
		{[]string{"-n", "2", "--parcelport", "nbio", "prog"}, "nbio"},
		{[]string{"-n", "2", "--parcelport", "tcp", "prog"}, "tcp"},
		{[]string{"-n", "2", "--parcelport", "shm", "prog"}, "shm"},
		{[]string{"-n", "2", "prog"}, ""},
	} {
		stderr.Reset()
		opts, err := parseRunArgs(c.args, &stderr)
		if err != nil {
			t.Fatalf("tessera run %q: %v\n%s", c.args, err, stderr.String())
		}
		got, set := optionsEnv(opts)["TESSERA_PARCELPORT"]
		if got != c.want || set != (c.want != "") {
			t.Errorf("tessera run %q sets TESSERA_PARCELPORT=%q (set: %v), want %q", c.args, got, set, c.want)
		}
	}
	stderr.Reset()
	if _, err := parseRunArgs([]string{"-n", "2", "--parcelport", "udp", "prog"}, &stderr); err == nil ||
		!strings.Contains(stderr.String(), `--parcelport must be tcp, nbio, shm or ucx, not "udp"`) {
		t.Errorf("tessera run --parcelport udp: %v, stderr %q", err, stderr.String())
	}
}

// optionsEnv is what the flags of opts set in every locality's
// environment, by variable.
func optionsEnv(opts runOptions) map[string]string {
	env := map[string]string{}
	for _, kv := range opts.options().Encode() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}
