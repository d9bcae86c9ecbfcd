package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobenv"
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
		want jobenv.Failure
	}{
		{"the body failed here", 3, fmt.Errorf("als: %w", cause),
			jobenv.Failure{Locality: 3, Root: true, Origin: 3, Cause: "als: " + cause.Error(), Status: ExitFailed}},
		{"an action failed", 0, &ActionError{Locality: 2, Action: "als.solve", Err: cause},
			jobenv.Failure{Locality: 0, Root: true, Origin: 0, Action: "als.solve", Cause: `action "als.solve" on locality 2: ` + cause.Error(), Status: ExitFailed}},
		{"the origin aborted", 1, aborted(3, abortError(3, cause).Error(), nil),
			jobenv.Failure{Locality: 1, Origin: 3, Told: true, Cause: cause.Error(), Status: ExitStopped}},
		{"another locality passed the abort on", 2, aborted(1, abortError(3, cause).Error(), nil),
			jobenv.Failure{Locality: 2, Origin: 3, Told: true, Cause: cause.Error(), Status: ExitStopped}},
		{"an abort without a locality", 2, aborted(1, "runtime: frame too large", nil),
			jobenv.Failure{Locality: 2, Origin: 1, Told: true, Cause: "runtime: frame too large", Status: ExitStopped}},
		{"a locality died", 1, fmt.Errorf("job failed: %w", &LocalityError{Locality: 2, Reason: "connection reset by peer"}),
			jobenv.Failure{Locality: 1, Origin: 2, Cause: "connection reset by peer", Status: ExitStopped}},
		{"the abort of one that lost another", 3, aborted(0, "locality 2 down: connection reset by peer", &LocalityError{Locality: 2, Reason: "connection reset by peer"}),
			jobenv.Failure{Locality: 3, Origin: 2, Cause: "connection reset by peer", Status: ExitStopped}},
		{"the others lost this one", 1, aborted(0, "locality 1 down: frame too large", &LocalityError{Locality: 1, Reason: "frame too large"}),
			jobenv.Failure{Locality: 1, Root: true, Origin: 1, Cause: "locality 0 down: aborted: locality 1 down: frame too large", Status: ExitFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.here, jobenv.PhaseMain, tt.err)
			if got.Detail != tt.err.Error() || got.Phase != jobenv.PhaseMain || got.Time.IsZero() {
				t.Errorf("detail %q, phase %q, time %v; want %q, %q and the time", got.Detail, got.Phase, got.Time, tt.err, jobenv.PhaseMain)
			}
			got.Detail, got.Phase, got.Time = "", "", time.Time{}
			if got != tt.want {
				t.Errorf("classify:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A locality reports its failure once: to the launcher's directory, or
// else as one line; verbose adds the whole error.
func TestReport(t *testing.T) {
	f := classify(2, jobenv.PhaseMain, aborted3())
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
		read, err := jobenv.ReadFailure(r.dir, 2)
		if err != nil || read == nil {
			t.Fatalf("jobenv.ReadFailure: %v, %v", read, err)
		}
		if read.Origin != 3 || read.Cause != f.Cause || read.Detail != f.Detail || !read.Time.Equal(f.Time) {
			t.Errorf("read back %+v, want %+v", *read, f)
		}
		if none, err := jobenv.ReadFailure(r.dir, 1); none != nil || err != nil {
			t.Errorf("jobenv.ReadFailure of a locality that wrote none: %v, %v", none, err)
		}
	}
}

func aborted3() error {
	return &LocalityError{Locality: 1, Reason: abortedPrefix + "locality 3: bad line 7"}
}
