package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/bench/report"
)

// TestNodePlanFeedsItsRows checks that the node plan runs every job the
// node section's rows read, and how it runs the baselines.
func TestNodePlanFeedsItsRows(t *testing.T) {
	p := nodePlan(2, true, true)
	jobs := map[string]job{}
	for _, ph := range p.phases {
		for rep := 1; rep <= ph.reps; rep++ {
			for _, j := range ph.jobs(rep) {
				jobs[j.name] = j
			}
		}
	}
	var node *report.Section
	for _, s := range report.Sections() {
		if s.Name == p.name {
			node = &s
		}
	}
	if node == nil {
		t.Fatalf("the report has no section %q", p.name)
	}
	for _, r := range node.Rows {
		for _, m := range []report.Measure{r.Num, r.Den} {
			for _, name := range m.Jobs {
				if _, ok := jobs[name]; !ok {
					t.Errorf("row %s reads job %q, which the plan does not run", r.ID, name)
				}
			}
		}
	}
	for _, name := range []string{"vader-pingpong", "vader-stream", "vader-coll"} {
		if argv := strings.Join(jobs[name].argv, " "); !strings.Contains(argv, "--mca btl self,vader") || !strings.Contains(argv, "--mca pml ob1") || jobs[name].group != "mpi" {
			t.Errorf("job %s: %q (group %q), want ob1 over self,vader in group mpi", name, argv, jobs[name].group)
		}
	}
	for name, tls := range map[string]string{"ucx-tcp": "UCX_TLS=tcp", "ucx-sm": "UCX_TLS=sm,self"} {
		j := jobs[name]
		if !slices.Contains(j.env, tls) || !slices.Contains(j.argv, "@pingpong-ucx") || j.group != "ucx" {
			t.Errorf("job %s: env %q argv %q group %q", name, j.env, j.argv, j.group)
		}
	}
	for _, pp := range []string{"tcp", "shm"} {
		for _, name := range []string{pp, "coll-" + pp, "cannon-" + pp, "als-" + pp} {
			if i := slices.Index(jobs[name].argv, "--parcelport"); i < 0 || jobs[name].argv[i+1] != pp {
				t.Errorf("job %s: %q does not choose the %s parcelport", name, jobs[name].argv, pp)
			}
		}
	}
	without := nodePlan(1, false, false)
	for _, ph := range without.phases {
		for _, j := range ph.jobs(1) {
			if j.group != "" {
				t.Errorf("without Open MPI and UCX the plan still runs %s", j.name)
			}
		}
	}
}
