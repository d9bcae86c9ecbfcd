package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeSnippets returns the Go code blocks of the repository's README.
func readmeSnippets(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippets [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && line == "```go":
			in, cur = true, nil
		case in && line == "```":
			in = false
			snippets = append(snippets, cur)
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		t.Fatal("README.md: a ```go block is not closed")
	}
	return snippets
}

// isElision reports whether a snippet line stands for lines left out.
func isElision(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "// ...") }

// excerpt reports whether snippet is an excerpt of file: its lines appear
// in file in order, consecutive except where the snippet has an elision
// line ("// ..."), which stands for any number of lines. Indentation is
// not compared.
func excerpt(snippet, file []string) bool {
	var match func(si, fi int) bool
	match = func(si, fi int) bool {
		if si == len(snippet) {
			return true
		}
		if isElision(snippet[si]) {
			for k := fi; k <= len(file); k++ {
				if match(si+1, k) {
					return true
				}
			}
			return false
		}
		return fi < len(file) && strings.TrimSpace(file[fi]) == strings.TrimSpace(snippet[si]) && match(si+1, fi+1)
	}
	for start := range file {
		if match(0, start) {
			return true
		}
	}
	return false
}

func TestExcerpt(t *testing.T) {
	file := strings.Split("a\nb\nc\nd\ne", "\n")
	for _, tc := range []struct {
		snippet string
		want    bool
	}{
		{"b\nc", true},
		{"b\nd", false},
		{"b\n// ... more\nd", true},
		{"a\n// ...\ne", true},
		{"c\n// ...\nb", false},
		{"  c\n\td", true},
		{"x", false},
	} {
		if got := excerpt(strings.Split(tc.snippet, "\n"), file); got != tc.want {
			t.Errorf("excerpt(%q) = %v, want %v", tc.snippet, got, tc.want)
		}
	}
}

// TestReadmeSnippetsAreTheTour checks that every Go snippet in the README
// is an excerpt of this program, which the build of this package compiles,
// and builds the first snippet, a whole program, on its own.
func TestReadmeSnippetsAreTheTour(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	file := strings.Split(string(src), "\n")
	snippets := readmeSnippets(t)
	if len(snippets) < 4 {
		t.Fatalf("README.md has %d Go snippets; the tour has at least 4", len(snippets))
	}
	for i, s := range snippets {
		if !excerpt(s, file) {
			t.Errorf("README.md's Go snippet %d is not an excerpt of examples/tour/main.go "+
				"(change both together):\n%s", i+1, strings.Join(s, "\n"))
		}
	}
	if len(snippets[0]) == 0 || snippets[0][0] != "package main" {
		t.Fatalf("README.md's first Go snippet is not a whole program (package main)")
	}
	// The first snippet alone, built inside this module so it finds it.
	dir, err := os.MkdirTemp(".", "_snippet")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(snippets[0], "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
		t.Errorf("README.md's first snippet does not build on its own: %v\n%s", err, out)
	}
}

// TestTourRuns runs the tour on four localities under the launcher and
// checks the lines the README shows.
func TestTourRuns(t *testing.T) {
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/tessera-amt/tessera/cmd/tessera", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "tessera"), "run", "-n", "4", filepath.Join(bin, "tour")).CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run -n 4 tour: %v\n%s", err, out)
	}
	for _, want := range []string{
		"[L0] locality 0 of 4: 0 squared on 1 is 0",
		"[L1] locality 1 of 4: 1 squared on 2 is 1",
		"[L2] locality 2 of 4: 2 squared on 3 is 4",
		"[L3] locality 3 of 4: 3 squared on 0 is 9",
		"[L2] locality 2: the ids add up to 6; its counter is at 1",
		"[L0] sum of A times its transpose: ",
	} {
		if !strings.Contains(string(out), want+"") {
			t.Errorf("the tour's output lacks %q:\n%s", want, out)
		}
	}
}
