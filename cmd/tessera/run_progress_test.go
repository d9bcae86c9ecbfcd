package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRunProgress(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	for _, c := range []struct {
		args []string
		want string // TESSERA_PROGRESS set for the localities; "" none
	}{
		{[]string{"-n", "2", "--progress", "poll", "prog"}, "poll"},
		{[]string{"-n", "2", "--progress", "block", "prog"}, "block"},
		{[]string{"-n", "2", "prog"}, ""},
	} {
		stderr.Reset()
		opts, err := parseRunArgs(c.args, &stderr)
		if err != nil {
			t.Fatalf("tessera run %q: %v\n%s", c.args, err, stderr.String())
		}
		got, set := optionsEnv(opts)["TESSERA_PROGRESS"]
		if got != c.want || set != (c.want != "") {
			t.Errorf("tessera run %q sets TESSERA_PROGRESS=%q (set: %v), want %q", c.args, got, set, c.want)
		}
	}
	stderr.Reset()
	if _, err := parseRunArgs([]string{"-n", "2", "--progress", "spin", "prog"}, &stderr); err == nil ||
		!strings.Contains(stderr.String(), `--progress must be block or poll, not "spin"`) {
		t.Errorf("tessera run --progress spin: %v, stderr %q", err, stderr.String())
	}
}

func TestParseRunTCPCongestion(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	opts, err := parseRunArgs([]string{"-n", "2", "--tcp-congestion", "reno", "prog"}, &stderr)
	if err != nil {
		t.Fatalf("tessera run --tcp-congestion reno: %v\n%s", err, stderr.String())
	}
	if got := optionsEnv(opts)["TESSERA_TCP_CONGESTION"]; got != "reno" {
		t.Errorf("tessera run --tcp-congestion reno sets TESSERA_TCP_CONGESTION=%q", got)
	}
	opts, _ = parseRunArgs([]string{"-n", "2", "prog"}, &stderr)
	if got, set := optionsEnv(opts)["TESSERA_TCP_CONGESTION"]; set {
		t.Errorf("tessera run without --tcp-congestion sets TESSERA_TCP_CONGESTION=%q", got)
	}
}

func TestParseRunBind(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if opts, err := parseRunArgs([]string{"-n", "2", "--bind", "core", "prog"}, &stderr); err != nil || opts.Bind != "core" {
		t.Fatalf("tessera run --bind core: %+v, %v\n%s", opts, err, stderr.String())
	}
	stderr.Reset()
	if _, err := parseRunArgs([]string{"-n", "2", "--bind", "socket", "prog"}, &stderr); err == nil ||
		!strings.Contains(stderr.String(), `--bind must be none or core, not "socket"`) {
		t.Errorf("tessera run --bind socket: %v, stderr %q", err, stderr.String())
	}
}
