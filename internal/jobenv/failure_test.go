package jobenv

import "testing"

func TestFailureLine(t *testing.T) {
	root := Failure{Locality: 3, Root: true, Origin: 3, Phase: PhaseMain, Cause: "bad line"}
	told := Failure{Origin: 3, Told: true, Cause: "bad line"}
	lost := Failure{Origin: 2, Cause: "connection reset by peer"}
	at := func(f Failure, loc uint32) Failure { f.Locality = loc; return f }
	for _, c := range []struct {
		f    Failure
		want string
	}{
		{root, "tessera: locality 3 failed in main: bad line"},
		{Failure{Locality: 1, Root: true, Origin: 1, Phase: PhaseStart, Cause: "no secret"}, "tessera: locality 1 failed to start: no secret"},
		{at(told, 0), "tessera: 3 other localities stopped because locality 3 failed"},
		{at(told, 1), "tessera: locality 1 stopped because locality 3 failed"},
		{at(lost, 0), "tessera: 3 other localities stopped: locality 2 down: connection reset by peer"},
		{at(lost, 1), "tessera: locality 1 stopped: locality 2 down: connection reset by peer"},
	} {
		if got := c.f.Line(4); got != c.want {
			t.Errorf("Line(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	if got := at(told, 0).Line(2); got != "tessera: 1 other locality stopped because locality 3 failed" {
		t.Errorf("of 2 localities: %q", got)
	}
}

func TestSameCause(t *testing.T) {
	a := Failure{Cause: "als on locality 0: reading ratings r.csv: no such file or directory"}
	b := Failure{Cause: "als on locality 12: reading ratings r.csv: no such file or directory"}
	c := Failure{Cause: "als on locality 1: ratings r.csv line 9: column 2"}
	if !SameCause(a, b) || SameCause(a, c) {
		t.Errorf("SameCause(a, b) = %v, SameCause(a, c) = %v; want true, false", SameCause(a, b), SameCause(a, c))
	}
}
