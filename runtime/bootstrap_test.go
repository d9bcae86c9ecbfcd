package runtime

import (
	"net"
	"strings"
	"testing"
)

// noListener stands for the inherited root listener, which no test here
// passes.
func noListener(int) (net.Listener, error) { return nil, nil }

// The localities on this machine and their cores: all of the job and the
// launcher's cores under tessera run, slurm's counts for this node under
// srun, unknown otherwise.
func TestFromEnvironmentNodeLocalities(t *testing.T) {
	secret := "00112233445566778899aabbccddeeff"
	for name, c := range map[string]struct {
		env        map[string]string
		want, cpus int
	}{
		"tessera run": {map[string]string{"TESSERA_NUM_LOCALITIES": "4", "TESSERA_LOCALITY": "1", "TESSERA_ROOT_ADDR": "127.0.0.1:9",
			"TESSERA_NODE_CPUS": "2", "TESSERA_SECRET": secret}, 4, 2},
		"slurm step": {map[string]string{"SLURM_NTASKS": "7", "SLURM_PROCID": "6", "SLURM_NODELIST": "n[1-3]", "SLURM_NODEID": "2",
			"SLURM_STEP_TASKS_PER_NODE": "3(x2),1", "SLURM_TASKS_PER_NODE": "8(x3)", "SLURM_CPUS_ON_NODE": "16", "TESSERA_SECRET": secret}, 1, 16},
		"slurm job": {map[string]string{"SLURM_NTASKS": "7", "SLURM_PROCID": "0", "SLURM_NODELIST": "n[1-3]", "SLURM_NODEID": "0",
			"SLURM_TASKS_PER_NODE": "3(x2),1", "TESSERA_SECRET": secret}, 3, 0},
		"slurm, no counts": {map[string]string{"SLURM_NTASKS": "2", "SLURM_PROCID": "0", "SLURM_NODELIST": "n1", "TESSERA_SECRET": secret}, 0, 0},
		"alone":            {map[string]string{}, 0, 0},
	} {
		cfg, _, err := fromEnvironment(Config{}, func(k string) string { return c.env[k] }, t.TempDir(), noListener)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.NodeLocalities != c.want || cfg.NodeCPUs != c.cpus {
			t.Errorf("%s: NodeLocalities %d, NodeCPUs %d; want %d, %d", name, cfg.NodeLocalities, cfg.NodeCPUs, c.want, c.cpus)
		}
	}
}

// A launcher's core count that is no number is refused, naming the variable.
func TestFromEnvironmentBadNodeCPUs(t *testing.T) {
	env := map[string]string{"TESSERA_NUM_LOCALITIES": "2", "TESSERA_LOCALITY": "0", "TESSERA_ROOT_ADDR": "127.0.0.1:9",
		"TESSERA_NODE_CPUS": "two", "TESSERA_SECRET": "00112233445566778899aabbccddeeff"}
	_, _, err := fromEnvironment(Config{}, func(k string) string { return env[k] }, t.TempDir(), noListener)
	if err == nil || !strings.Contains(err.Error(), `TESSERA_NODE_CPUS="two"`) {
		t.Fatalf("TESSERA_NODE_CPUS=two: %v, want an error naming it", err)
	}
}

// Slurm's counts that do not parse leave the hint unknown and are
// reported as warnings naming the variable, not refused.
func TestFromEnvironmentBadSlurmCountsWarn(t *testing.T) {
	env := map[string]string{"SLURM_NTASKS": "2", "SLURM_PROCID": "0", "SLURM_NODELIST": "n1", "SLURM_NODEID": "0",
		"SLURM_STEP_TASKS_PER_NODE": "2(x", "SLURM_CPUS_ON_NODE": "many", "TESSERA_SECRET": "00112233445566778899aabbccddeeff"}
	cfg, warnings, err := fromEnvironment(Config{}, func(k string) string { return env[k] }, t.TempDir(), noListener)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeLocalities != 0 || cfg.NodeCPUs != 0 {
		t.Errorf("NodeLocalities %d, NodeCPUs %d; want 0, 0", cfg.NodeLocalities, cfg.NodeCPUs)
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"SLURM_STEP_TASKS_PER_NODE", `SLURM_CPUS_ON_NODE="many"`} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q do not name %s", all, want)
		}
	}
}
