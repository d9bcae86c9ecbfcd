package agas

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Four real processes, launched as a user launches them, create objects,
// call each other's by GID and migrate them.
func TestObjectsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/tessera-amt/tessera/cmd/tessera", "./testdata/objectsjob").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err = exec.CommandContext(ctx, filepath.Join(dir, "tessera"), "run", "-n", "4", filepath.Join(dir, "objectsjob")).CombinedOutput()
	if err != nil {
		t.Fatalf("tessera run -n 4 objectsjob: %v\n%s", err, out)
	}
	for l := range 4 {
		want := fmt.Sprintf("[L%d] locality %d: counter {%d:1} total 200", l, l, l)
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
