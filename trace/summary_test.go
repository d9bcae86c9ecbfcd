package trace

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestWriteSummary(t *testing.T) {
	a := readTaskArchive(t, twoLocalityRun)
	for _, per := range []bool{false, true} {
		var b bytes.Buffer
		must(t, WriteSummary(&b, a, per))
		out := b.String()
		space := regexp.MustCompile(` +`)
		norm := space.ReplaceAllString(out, " ")
		for _, want := range []string{
			": 2 localities, 3 lanes, 18 events, written by tessera trace test\nwall time 100ns\n",
			"\n locality lanes busy available utilisation\n",
			"\n 0 2 90ns 200ns 45.0%\n",
			"\n 1 1 60ns 100ns 60.0%\n",
			"\n all 3 150ns 300ns 50.0%\n",
			"profile of all localities\nwall time 100ns, 3 lane(s), available time 300ns, busy 150ns (50.0% utilisation)\n",
			"\n work 3 120ns 40ns 30ns 50ns 40.00\n",
		} {
			if !strings.Contains(norm, want) {
				t.Errorf("summary lacks %q:\n%s", want, out)
			}
		}
		if got := strings.Contains(out, "profile of locality 1\n"); got != per {
			t.Errorf("per-locality profiles shown: %v, want %v:\n%s", got, per, out)
		}
	}
}

func TestWriteSummaryUnmatched(t *testing.T) {
	a := readTaskArchive(t, []tev{leave(0, 1, "x")})
	err := WriteSummary(&bytes.Buffer{}, a, false)
	if err == nil || !strings.Contains(err.Error(), "traces.otf2: profile: location 0 event 0: Leave of region \"x\" with no region entered") {
		t.Errorf("error %v", err)
	}
}

func TestWriteProfilesCSV(t *testing.T) {
	per, all, err := ProfileFromOTF2(readTaskArchive(t, twoLocalityRun))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	must(t, WriteProfilesCSV(&b, per, all))
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r[:4], " "))
	}
	want := []string{
		"locality region count total_ns",
		"0 work 2 70", "0 kernel 1 20", "0 main 1 20",
		"1 work 1 50", "1 finish 1 10",
		"all work 3 120", "all kernel 1 20", "all main 1 20", "all finish 1 10",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFindOTF2(t *testing.T) {
	dir := t.TempDir()
	anchor := writeTaskArchive(t, dir, twoLocalityRun)
	two := t.TempDir()
	writeTaskArchive(t, two, twoLocalityRun)
	must(t, os.WriteFile(filepath.Join(two, "other.otf2"), nil, 0o644))
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"directory", dir, anchor, ""},
		{"anchor file", anchor, anchor, ""},
		{"empty directory", t.TempDir(), "", "no OTF2 archive"},
		{"two archives", two, "", "2 OTF2 archives"},
		{"missing", filepath.Join(dir, "nothing"), "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindOTF2(tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("FindOTF2 = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
