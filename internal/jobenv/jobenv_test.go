package jobenv

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lookup is a getenv over env, a list of NAME=value as Encode gives it;
// the last value of a name wins, as in exec.Cmd.Env.
func lookup(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func fromMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// What a launcher encodes, a locality reads back unchanged.
func TestEncodeFromEnvRoundTrip(t *testing.T) {
	all := Options{Parcelport: "nbio", Progress: "poll", TCPCongestion: "reno", MetricsAddr: "127.0.0.1:9100",
		Trace: "/data/run/tr", TraceFormat: "otf2,perfetto", Profile: "csv", TraceSample: "20ms"}
	for name, l := range map[string]Launch{
		"locality 0 with its listener": {Locality: 0, NumLocalities: 4, RootAddr: "127.0.0.1:4000", RootFD: RootFD,
			ListenHost: "127.0.0.1", NodeCPUs: 8, Secret: "00112233445566778899aabbccddeeff", JobID: "a1b2", Options: all},
		"locality 3, no options": {Locality: 3, NumLocalities: 4, RootAddr: "127.0.0.1:4000", ListenHost: "127.0.0.1",
			Secret: "00112233445566778899aabbccddeeff"},
		"a secret file, all interfaces": {Locality: 1, NumLocalities: 2, RootAddr: "host:1", SecretFile: "/etc/tessera/secret",
			Options: Options{Progress: "block"}},
		"one locality": {Locality: 0, NumLocalities: 1, RootAddr: "127.0.0.1:0"},
	} {
		l.Source, l.NodeLocalities = Launcher, int(l.NumLocalities)
		got, err := FromEnv(lookup(l.Encode()))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, l) {
			t.Errorf("%s: encoded %q\nread back %+v\nwant      %+v", name, l.Encode(), got, l)
		}
	}
}

// Only locality 0 has the root listener: another locality ignores the
// variable, as it would an enclosing job's.
func TestRootFDOnlyForLocalityZero(t *testing.T) {
	env := map[string]string{VarNumLocalities: "2", VarLocality: "1", VarRootAddr: "h:1", VarRootFD: "3"}
	l, err := FromEnv(fromMap(env))
	if err != nil || l.RootFD != 0 {
		t.Errorf("locality 1 with %s=3: RootFD %d, %v; want 0", VarRootFD, l.RootFD, err)
	}
	env[VarLocality], env[VarRootFD] = "0", "three"
	if _, err := FromEnv(fromMap(env)); err == nil || !strings.Contains(err.Error(), VarRootFD+`="three"`) {
		t.Errorf("%s=three: %v, want an error naming it", VarRootFD, err)
	}
}

// A launcher's numbers that do not parse are refused with the variable's
// name and value; the options are read all the same.
func TestFromEnvBadNumbers(t *testing.T) {
	for name, bad := range map[string]string{VarNumLocalities: "four", VarLocality: "-1", VarNodeCPUs: "two"} {
		env := map[string]string{VarNumLocalities: "4", VarLocality: "1", VarNodeCPUs: "2", VarProgress: "poll"}
		env[name] = bad
		l, err := FromEnv(fromMap(env))
		if err == nil || !strings.Contains(err.Error(), name+`="`+bad+`"`) {
			t.Errorf("%s=%s: %v, want an error naming it", name, bad, err)
		}
		if l.Options.Progress != "poll" {
			t.Errorf("%s=%s: options %+v, want them read", name, bad, l.Options)
		}
	}
}

// Slurm's variables: the root is task 0 on the step's first host, on
// TESSERA_PORT or a port of the job and step ids; the tasks and cores of
// this node come from slurm's counts.
func TestFromEnvSlurm(t *testing.T) {
	base := map[string]string{SlurmNTasks: "7", SlurmProcID: "6", SlurmNodeList: "m[1-9]", SlurmStepNodeList: "n[03-05]",
		SlurmJobID: "1234", SlurmStepID: "2", SlurmNodeID: "2", SlurmStepTasksPerNode: "3(x2),1", SlurmTasksPerNode: "8(x3)",
		SlurmCPUsOnNode: "16", VarListenHost: "10.0.0.5"}
	l, err := FromEnv(fromMap(base))
	if err != nil {
		t.Fatal(err)
	}
	port := RootPortBase + (1234*16+2)%RootPortSpan
	want := Launch{Source: Slurm, Locality: 6, NumLocalities: 7, RootAddr: "n03:" + strconv.Itoa(port), ListenHost: "10.0.0.5",
		NodeLocalities: 1, NodeCPUs: 16}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("slurm step:\n got %+v\nwant %+v", l, want)
	}
	base[VarPort] = "5555"
	delete(base, SlurmStepNodeList)
	if l, err := FromEnv(fromMap(base)); err != nil || l.RootAddr != "m1:5555" {
		t.Errorf("with %s and the job's node list: %q, %v; want m1:5555", VarPort, l.RootAddr, err)
	}
	base[SlurmNodeList] = "m[1-"
	if _, err := FromEnv(fromMap(base)); err == nil || !strings.Contains(err.Error(), "slurm node list") {
		t.Errorf("a bad node list: %v", err)
	}
}

// A launcher's variables win over slurm's: `tessera run` inside an
// allocation runs its own job.
func TestFromEnvLauncherWinsOverSlurm(t *testing.T) {
	env := map[string]string{VarNumLocalities: "2", VarLocality: "1", VarRootAddr: "127.0.0.1:9",
		SlurmNTasks: "64", SlurmProcID: "17", SlurmNodeList: "n[1-8]"}
	l, err := FromEnv(fromMap(env))
	if err != nil || l.Source != Launcher || l.NumLocalities != 2 || l.Locality != 1 {
		t.Errorf("got %+v, %v; want locality 1 of the launcher's 2", l, err)
	}
}

// Without a launcher or slurm, a job of one locality.
func TestFromEnvAlone(t *testing.T) {
	l, err := FromEnv(fromMap(map[string]string{VarTrace: "/t"}))
	want := Launch{Source: Alone, NumLocalities: 1, Options: Options{Trace: "/t"}}
	if err != nil || !reflect.DeepEqual(l, want) {
		t.Errorf("got %+v, %v; want %+v", l, err, want)
	}
}

// Environ replaces an enclosing job's variables, set by Encode or not,
// sets the options it has, and keeps the options it leaves unset and
// everything else.
func TestEnviron(t *testing.T) {
	base := []string{"PATH=/bin", VarLocality + "=77", VarRootFD + "=99", VarSecret + "=stale", VarJobID + "=old",
		VarNodeCPUs + "=64", VarTrace + "=/inherited", VarProgress + "=block", "GOMAXPROCS=3"}
	l := Launch{Locality: 2, NumLocalities: 3, RootAddr: "127.0.0.1:1", ListenHost: "127.0.0.1", Secret: "00112233445566778899aabbccddeeff",
		Options: Options{Progress: "poll"}}
	env := l.Environ(base)
	got := lookup(env)
	for k, want := range map[string]string{"PATH": "/bin", "GOMAXPROCS": "3", VarLocality: "2", VarNumLocalities: "3",
		VarRootFD: "", VarSecret: l.Secret, VarJobID: "", VarNodeCPUs: "", VarTrace: "/inherited", VarProgress: "poll"} {
		if got(k) != want {
			t.Errorf("%s=%q, want %q (environment %q)", k, got(k), want, env)
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if n := slices.IndexFunc(env, func(s string) bool { return strings.HasPrefix(s, k+"=") }); env[n] != kv {
			t.Errorf("%s is set twice in %q", k, env)
		}
	}
	if base[1] != VarLocality+"=77" {
		t.Error("Environ changed its argument")
	}
}

// Every variable this package names is in Names, once.
func TestNames(t *testing.T) {
	names := Names()
	for _, n := range []string{VarLocality, VarNumLocalities, VarNodeCPUs, VarRootAddr, VarRootFD, VarListenHost,
		VarSecret, VarSecretFile, VarJobID, VarPort, VarParcelport, VarProgress, VarTCPCongestion, VarMetricsAddr,
		VarTrace, VarTraceFormat, VarProfile, VarTraceSample, SlurmProcID, SlurmNTasks, SlurmStepNodeList,
		SlurmNodeList, SlurmJobID, SlurmStepID, SlurmNodeID, SlurmStepTasksPerNode, SlurmTasksPerNode, SlurmCPUsOnNode} {
		if c := strings.Count(" "+strings.Join(names, " ")+" ", " "+n+" "); c != 1 {
			t.Errorf("%s is %d times in Names", n, c)
		}
	}
	var o Options
	for _, kv := range o.vars() {
		if !slices.Contains(names, kv.name) {
			t.Errorf("option %s is not in Names", kv.name)
		}
	}
}
