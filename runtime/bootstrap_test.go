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

// The job comes from the environment only when the program leaves
// NumLocalities 0; locality 0 takes the listener it inherited, and the
// secret is the launcher's.
func TestFromEnvironmentJob(t *testing.T) {
	env := map[string]string{"TESSERA_NUM_LOCALITIES": "3", "TESSERA_LOCALITY": "0", "TESSERA_ROOT_ADDR": "127.0.0.1:9",
		"TESSERA_ROOT_FD": "3", "TESSERA_LISTEN_HOST": "127.0.0.1", "TESSERA_SECRET": "00112233445566778899aabbccddeeff"}
	getenv := func(k string) string { return env[k] }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	inherited := -1
	inherit := func(fd int) (net.Listener, error) { inherited = fd; return ln, nil }
	cfg, _, err := fromEnvironment(Config{}, getenv, t.TempDir(), inherit)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Locality != 0 || cfg.NumLocalities != 3 || cfg.RootAddr != "127.0.0.1:9" || cfg.ListenHost != "127.0.0.1" ||
		cfg.Listener != ln || inherited != 3 || len(cfg.Secret) != 16 || cfg.NodeLocalities != 3 {
		t.Errorf("from a launcher's environment: %+v (inherited fd %d)", cfg, inherited)
	}
	mine := Config{Locality: 1, NumLocalities: 2, RootAddr: "10.0.0.1:5", Secret: []byte("the program's own job secret")}
	cfg, _, err = fromEnvironment(mine, getenv, t.TempDir(), inherit)
	if err != nil || cfg.Locality != 1 || cfg.NumLocalities != 2 || cfg.RootAddr != "10.0.0.1:5" || cfg.ListenHost != "" ||
		cfg.Listener != nil || string(cfg.Secret) != string(mine.Secret) {
		t.Errorf("a program's own job was changed: %+v, %v", cfg, err)
	}
	env["TESSERA_NUM_LOCALITIES"] = "three"
	if _, _, err := fromEnvironment(mine, getenv, t.TempDir(), inherit); err != nil {
		t.Errorf("a bad job in the environment failed a program with a job of its own: %v", err)
	}
}

// The options fill what the program left zero and never override what it
// set; a bad value is refused naming the variable, the value and the
// locality. Start refuses the same mistakes made in the Config, naming
// the field.
func TestFromEnvironmentOptions(t *testing.T) {
	env := map[string]string{"TESSERA_PARCELPORT": "nbio", "TESSERA_PROGRESS": "poll", "TESSERA_TCP_CONGESTION": "reno",
		"TESSERA_METRICS_ADDR": "127.0.0.1:9100"}
	getenv := func(k string) string { return env[k] }
	cfg, _, err := fromEnvironment(Config{}, getenv, "", noListener)
	if err != nil || cfg.Transport != ParcelportNBIO || cfg.Progress != ProgressPoll || cfg.TCPCongestion != "reno" ||
		cfg.MetricsAddr != "127.0.0.1:9100" {
		t.Errorf("from the environment: %+v, %v", cfg, err)
	}
	mine := Config{Transport: ParcelportTCP, Progress: ProgressBlock, TCPCongestion: "cubic", MetricsAddr: ":0"}
	cfg, _, err = fromEnvironment(mine, getenv, "", noListener)
	if err != nil || cfg.Transport != ParcelportTCP || cfg.Progress != ProgressBlock || cfg.TCPCongestion != "cubic" ||
		cfg.MetricsAddr != ":0" {
		t.Errorf("the program's settings were overridden: %+v, %v", cfg, err)
	}
	job := Config{Locality: 2, NumLocalities: 3, RootAddr: "127.0.0.1:9", Secret: []byte("a job secret of 32 bytes, or so")}
	for k, v := range map[string]string{"TESSERA_PARCELPORT": "carrier-pigeon", "TESSERA_METRICS_ADDR": "no-port-here"} {
		bad := map[string]string{k: v}
		_, _, err := fromEnvironment(job, func(k string) string { return bad[k] }, "", noListener)
		if err == nil || !strings.Contains(err.Error(), k+`="`+v+`"`) || !strings.Contains(err.Error(), "locality 2") {
			t.Errorf("%s=%s: %v, want an error naming it and the locality", k, v, err)
		}
	}
	for field, c := range map[string]Config{
		"Config.Transport":     {Transport: "carrier-pigeon"},
		"Config.Trace.Formats": {Trace: TraceConfig{Dir: "d", Formats: []string{"chrome"}}},
		"Config.Trace.Profile": {Trace: TraceConfig{Profile: "html"}},
	} {
		c.NumLocalities = 1
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s wrong: %v, want an error naming it", field, err)
		}
	}
}
