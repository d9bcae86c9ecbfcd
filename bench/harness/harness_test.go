package main

import (
	"strings"
	"testing"
)

func TestBenchLinesKeepLocalityZero(t *testing.T) {
	out := "[L0] pingpong: warming up\n[L0] BenchmarkPingpong/tessera_rtt 20000 23.4 us/rtt\n[L1] BenchmarkPingpong/tessera_rtt 20000 99 us/rtt\n" +
		"BenchmarkMPI/mpi_rtt 20000 12.5 us/rtt\nBenchmarkTasks\ngoos: linux\n"
	got := benchLines(out)
	want := []string{"BenchmarkPingpong/tessera_rtt 20000 23.4 us/rtt", "BenchmarkMPI/mpi_rtt 20000 12.5 us/rtt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("benchLines = %q, want %q", got, want)
	}
}

func TestAdapters(t *testing.T) {
	als := "[L0] iteration 1/2: 0.3 s, loss 1234.5\n[L1] iteration 1/2: 0.3 s, loss 1\n[L0] iteration 2/2: 0.2 s, loss 1200.25\n[L0] als: 2 iterations in 0.512 s on 2 localities\n"
	if got := alsLines(als); len(got) != 1 || got[0] != "BenchmarkALS/tessera 2 0.512 s/op 1200.25 loss" {
		t.Errorf("alsLines = %q", got)
	}
	cannon := "[L0] cannon: 2048 x 2048 product\n[L0] RESULT name=cannon n=2048 localities=4 seconds=0.123000 gflops=139.780 times=0.2,0.123\n"
	if got := cannonLines(cannon); len(got) != 1 || got[0] != "BenchmarkCannon/n=2048 1 0.123000 s/op 139.780 GFLOP/s" {
		t.Errorf("cannonLines = %q", got)
	}
}

func TestAgree(t *testing.T) {
	same := []string{"BenchmarkALS/numpy 5 2.1 s/op 100.0000001 loss", "BenchmarkALS/tessera 5 0.5 s/op 100 loss"}
	if err := agree("loss", 1e-6)(same); err != nil {
		t.Error(err)
	}
	if err := agree("loss", 1e-6)(append(same, "BenchmarkALS/tessera 5 0.5 s/op 101 loss")); err == nil {
		t.Error("no error for losses that differ")
	}
	if err := agree("checksum", 1e-9)(same); err == nil {
		t.Error("no error when no run printed the value")
	}
}

func TestAlternate(t *testing.T) {
	names := func(jobs []job) string {
		var s []string
		for _, j := range jobs {
			s = append(s, j.name)
		}
		return strings.Join(s, ",")
	}
	jobs := func() []job { return []job{{name: "a"}, {name: "b"}, {name: "c"}} }
	if got := names(alternate(1, jobs())); got != "a,b,c" {
		t.Errorf("repetition 1: %s", got)
	}
	if got := names(alternate(2, jobs())); got != "c,b,a" {
		t.Errorf("repetition 2: %s", got)
	}
}

func TestSelected(t *testing.T) {
	if !selected("spine", nil) || !selected("conv1d", []string{"als", "conv"}) || selected("cannon", []string{"als"}) {
		t.Error("selected")
	}
}
