package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	cause := errors.New(`ratings r.csv line 7: column 2 (movieId): "abc" is not an integer`)
	aborted := func(from uint32, why string, lost *LocalityError) error {
		return &LocalityError{Locality: from, Reason: abortedPrefix + why, lost: lost}
	}
	tests := []struct {
		name string
		here uint32
		err  error
		want Failure
	}{
		{"the body failed here", 3, fmt.Errorf("als: %w", cause),
			Failure{Locality: 3, Root: true, Origin: 3, Cause: "als: " + cause.Error(), Status: ExitFailed}},
		{"an action failed", 0, &ActionError{Locality: 2, Action: "als.solve", Err: cause},
			Failure{Locality: 0, Root: true, Origin: 0, Action: "als.solve", Cause: `action "als.solve" on locality 2: ` + cause.Error(), Status: ExitFailed}},
		{"the origin aborted", 1, aborted(3, abortError(3, cause).Error(), nil),
			Failure{Locality: 1, Origin: 3, Told: true, Cause: cause.Error(), Status: ExitStopped}},
		{"another locality passed the abort on", 2, aborted(1, abortError(3, cause).Error(), nil),
			Failure{Locality: 2, Origin: 3, Told: true, Cause: cause.Error(), Status: ExitStopped}},
		{"an abort without a locality", 2, aborted(1, "runtime: frame too large", nil),
			Failure{Locality: 2, Origin: 1, Told: true, Cause: "runtime: frame too large", Status: ExitStopped}},
		{"a locality died", 1, fmt.Errorf("job failed: %w", &LocalityError{Locality: 2, Reason: "connection reset by peer"}),
			Failure{Locality: 1, Origin: 2, Cause: "connection reset by peer", Status: ExitStopped}},
		{"the abort of one that lost another", 3, aborted(0, "locality 2 down: connection reset by peer", &LocalityError{Locality: 2, Reason: "connection reset by peer"}),
			Failure{Locality: 3, Origin: 2, Cause: "connection reset by peer", Status: ExitStopped}},
		{"the others lost this one", 1, aborted(0, "locality 1 down: frame too large", &LocalityError{Locality: 1, Reason: "frame too large"}),
			Failure{Locality: 1, Root: true, Origin: 1, Cause: "locality 0 down: aborted: locality 1 down: frame too large", Status: ExitFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.here, PhaseMain, tt.err)
			if got.Detail != tt.err.Error() || got.Phase != PhaseMain || got.Time.IsZero() {
				t.Errorf("detail %q, phase %q, time %v; want %q, %q and the time", got.Detail, got.Phase, got.Time, tt.err, PhaseMain)
			}
			got.Detail, got.Phase, got.Time = "", "", time.Time{}
			if got != tt.want {
				t.Errorf("classify:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

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

// A locality reports its failure once: to the launcher's directory, or
// else as one line; verbose adds the whole error.
func TestReport(t *testing.T) {
	f := classify(2, PhaseMain, aborted3())
	for _, c := range []struct {
		dir, verbose bool
		want         []string // lines on stderr
	}{
		{false, false, []string{"tessera: locality 2 stopped because locality 3 failed"}},
		{true, false, nil},
		{false, true, []string{"tessera: locality 2: " + f.Detail, "tessera: locality 2 stopped because locality 3 failed"}},
		{true, true, []string{"tessera: locality 2: " + f.Detail}},
	} {
		var stderr bytes.Buffer
		r := &reporter{stderr: &stderr, verbose: c.verbose, n: 4}
		if c.dir {
			r.dir = t.TempDir()
		}
		if code := r.report(f); code != ExitStopped {
			t.Errorf("dir %v verbose %v: status %d, want %d", c.dir, c.verbose, code, ExitStopped)
		}
		got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(c.want) == 0 && stderr.Len() == 0 {
			got = nil
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("dir %v verbose %v: stderr\n%s\nwant\n%s", c.dir, c.verbose, stderr.String(), strings.Join(c.want, "\n"))
		}
		if !c.dir {
			continue
		}
		read, err := ReadFailure(r.dir, 2)
		if err != nil || read == nil {
			t.Fatalf("ReadFailure: %v, %v", read, err)
		}
		if read.Origin != 3 || read.Cause != f.Cause || read.Detail != f.Detail || !read.Time.Equal(f.Time) {
			t.Errorf("read back %+v, want %+v", *read, f)
		}
		if none, err := ReadFailure(r.dir, 1); none != nil || err != nil {
			t.Errorf("ReadFailure of a locality that wrote none: %v, %v", none, err)
		}
	}
}

func aborted3() error {
	return &LocalityError{Locality: 1, Reason: abortedPrefix + "locality 3: bad line 7"}
}
