package jobenv

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The variables a launcher sets for each locality.
const (
	VarLocality      = "TESSERA_LOCALITY"
	VarNumLocalities = "TESSERA_NUM_LOCALITIES"
	VarNodeCPUs      = "TESSERA_NODE_CPUS"
	VarRootAddr      = "TESSERA_ROOT_ADDR"
	VarRootFD        = "TESSERA_ROOT_FD"
	VarListenHost    = "TESSERA_LISTEN_HOST"
	VarSecret        = "TESSERA_SECRET"
	VarSecretFile    = "TESSERA_SECRET_FILE"
	VarJobID         = "TESSERA_JOB_ID"
	// VarPort is locality 0's port under slurm.
	VarPort = "TESSERA_PORT"
	// VarFailureDir is a directory where a locality that fails writes its
	// report (runtime.WriteFailure) for the launcher, instead of printing
	// it.
	VarFailureDir = "TESSERA_FAILURE_DIR"
	// VarVerbose, when 1, makes every locality print the whole of its
	// failure on stderr, as it saw it, besides any report.
	VarVerbose = "TESSERA_VERBOSE"
)

// The variables of the job's options (Options).
const (
	VarParcelport    = "TESSERA_PARCELPORT"
	VarProgress      = "TESSERA_PROGRESS"
	VarTCPCongestion = "TESSERA_TCP_CONGESTION"
	VarMetricsAddr   = "TESSERA_METRICS_ADDR"
	VarTrace         = "TESSERA_TRACE"
	VarTraceFormat   = "TESSERA_TRACE_FORMAT"
	VarProfile       = "TESSERA_PROFILE"
	VarTraceSample   = "TESSERA_TRACE_SAMPLE"
)

// The slurm variables FromEnv reads.
const (
	SlurmProcID           = "SLURM_PROCID"
	SlurmNTasks           = "SLURM_NTASKS"
	SlurmStepNodeList     = "SLURM_STEP_NODELIST"
	SlurmNodeList         = "SLURM_NODELIST"
	SlurmJobID            = "SLURM_JOB_ID"
	SlurmStepID           = "SLURM_STEP_ID"
	SlurmNodeID           = "SLURM_NODEID"
	SlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE"
	SlurmTasksPerNode     = "SLURM_TASKS_PER_NODE"
	SlurmCPUsOnNode       = "SLURM_CPUS_ON_NODE"
)

// Names returns every variable of the protocol: the TESSERA_* names and
// the slurm variables FromEnv reads.
func Names() []string {
	return []string{
		VarLocality, VarNumLocalities, VarNodeCPUs, VarRootAddr, VarRootFD, VarListenHost,
		VarSecret, VarSecretFile, VarJobID, VarPort, VarFailureDir, VarVerbose,
		VarParcelport, VarProgress, VarTCPCongestion, VarMetricsAddr,
		VarTrace, VarTraceFormat, VarProfile, VarTraceSample,
		SlurmProcID, SlurmNTasks, SlurmStepNodeList, SlurmNodeList, SlurmJobID, SlurmStepID,
		SlurmNodeID, SlurmStepTasksPerNode, SlurmTasksPerNode, SlurmCPUsOnNode,
	}
}

// RootFD is the descriptor a launcher passes locality 0's listener as: the
// first of exec.Cmd.ExtraFiles.
const RootFD = 3

// Slurm root port range: RootPortBase + (job*16+step) % RootPortSpan.
const (
	RootPortBase = 17000
	RootPortSpan = 16000
)

// Source says where a locality's launch facts come from.
type Source uint8

const (
	Alone    Source = iota // neither a launcher nor slurm: a job of one locality
	Launcher               // TESSERA_* from `tessera run` or another launcher
	Slurm                  // SLURM_* from srun
)

func (s Source) String() string {
	switch s {
	case Alone:
		return "alone"
	case Launcher:
		return "launcher"
	case Slurm:
		return "slurm"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Options are the job's choices that `tessera run`'s flags set for every
// locality, as text; "" is unset. The runtime checks and parses them.
type Options struct {
	Parcelport    string // VarParcelport
	Progress      string // VarProgress
	TCPCongestion string // VarTCPCongestion
	MetricsAddr   string // VarMetricsAddr
	Trace         string // VarTrace
	TraceFormat   string // VarTraceFormat
	Profile       string // VarProfile
	TraceSample   string // VarTraceSample
}

// vars pairs each option's variable with its field.
func (o *Options) vars() []struct {
	name string
	v    *string
} {
	return []struct {
		name string
		v    *string
	}{
		{VarParcelport, &o.Parcelport}, {VarProgress, &o.Progress}, {VarTCPCongestion, &o.TCPCongestion},
		{VarMetricsAddr, &o.MetricsAddr}, {VarTrace, &o.Trace}, {VarTraceFormat, &o.TraceFormat},
		{VarProfile, &o.Profile}, {VarTraceSample, &o.TraceSample},
	}
}

// Encode returns the variables of the options that are set, as
// "NAME=value", in a fixed order.
func (o Options) Encode() []string {
	var env []string
	for _, kv := range o.vars() {
		if *kv.v != "" {
			env = append(env, kv.name+"="+*kv.v)
		}
	}
	return env
}

func (o *Options) fromEnv(getenv func(string) string) {
	for _, kv := range o.vars() {
		*kv.v = getenv(kv.name)
	}
}

// Launch is what one locality learns from its environment: which locality
// of which job it is, how to reach the others, and the job's options.
type Launch struct {
	Source        Source
	Locality      uint32
	NumLocalities uint32
	RootAddr      string // host:port where locality 0 listens
	// RootFD, if not 0, is the descriptor of locality 0's listener,
	// inherited from the launcher (InheritListener); only locality 0 has it.
	RootFD     int
	ListenHost string // host the other localities listen on; "" all interfaces
	// NodeLocalities is how many localities of the job run on this
	// machine, and NodeCPUs how many cores they share; 0 when not known. A
	// launcher starts all of its job on its machine: its NodeLocalities is
	// NumLocalities, and Encode does not write it.
	NodeLocalities int
	NodeCPUs       int
	// Secret is the job secret as hex (VarSecret), SecretFile the file
	// holding it (VarSecretFile); see LoadSecret.
	Secret     string
	SecretFile string
	JobID      string // VarJobID, for people
	Options    Options
	// Warnings are what FromEnv could not read but went on without: slurm
	// counts that only hint whether the cores are shared.
	Warnings []string
}

// Encode returns the environment a launcher gives the locality l
// describes, as "NAME=value": the job's facts as TESSERA_* variables (l's
// Source is not written: whatever it was, FromEnv reads them back with
// Source Launcher), and the options that are set.
func (l Launch) Encode() []string {
	env := []string{
		VarLocality + "=" + strconv.FormatUint(uint64(l.Locality), 10),
		VarNumLocalities + "=" + strconv.FormatUint(uint64(l.NumLocalities), 10),
		VarRootAddr + "=" + l.RootAddr,
	}
	add := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	add(VarListenHost, l.ListenHost)
	if l.NodeCPUs > 0 {
		add(VarNodeCPUs, strconv.Itoa(l.NodeCPUs))
	}
	if l.RootFD != 0 {
		add(VarRootFD, strconv.Itoa(l.RootFD))
	}
	add(VarSecret, l.Secret)
	add(VarSecretFile, l.SecretFile)
	add(VarJobID, l.JobID)
	return append(env, l.Options.Encode()...)
}

// jobVars are the variables that describe one job: a launcher removes
// every one of them from the environment it passes on, set or not, so that
// nothing of an enclosing job leaks into its own.
func jobVars() []string {
	return []string{VarLocality, VarNumLocalities, VarNodeCPUs, VarRootAddr, VarRootFD,
		VarListenHost, VarSecret, VarJobID, VarFailureDir, VarVerbose}
}

// Environ returns base (an environment, as os.Environ gives it) for the
// locality l describes: without the job variables of any enclosing job
// and without the variables Encode sets, followed by Encode's. Options l
// leaves unset keep their values in base.
func (l Launch) Environ(base []string) []string {
	own := l.Encode()
	drop := jobVars()
	for _, kv := range own {
		k, _, _ := strings.Cut(kv, "=")
		drop = append(drop, k)
	}
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, k)
	})
	return append(env, own...)
}

// FromEnv reads the locality's launch from getenv (os.Getenv at a
// program's edge): from TESSERA_NUM_LOCALITIES and the rest of a
// launcher's variables when that is set, else from slurm's when
// SLURM_NTASKS and SLURM_PROCID are set, else a job of one locality. An
// error names the variable and its value; the Options are read even then.
func FromEnv(getenv func(string) string) (Launch, error) {
	var l Launch
	l.Options.fromEnv(getenv)
	l.Secret, l.SecretFile = getenv(VarSecret), getenv(VarSecretFile)
	var err error
	switch {
	case getenv(VarNumLocalities) != "":
		err = l.fromLauncher(getenv)
	case getenv(SlurmNTasks) != "" && getenv(SlurmProcID) != "":
		err = l.fromSlurm(getenv)
	default:
		l.Source, l.Locality, l.NumLocalities = Alone, 0, 1
	}
	return l, err
}

// number parses the variable name as a uint32.
func number(getenv func(string) string, name string) (uint32, error) {
	v, err := strconv.ParseUint(getenv(name), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("environment %s=%q: not a number", name, getenv(name))
	}
	return uint32(v), nil
}

func (l *Launch) fromLauncher(getenv func(string) string) error {
	l.Source = Launcher
	var err error
	if l.NumLocalities, err = number(getenv, VarNumLocalities); err != nil {
		return err
	}
	if l.Locality, err = number(getenv, VarLocality); err != nil {
		return err
	}
	l.RootAddr, l.ListenHost, l.JobID = getenv(VarRootAddr), getenv(VarListenHost), getenv(VarJobID)
	l.NodeLocalities = int(l.NumLocalities) // a launcher starts all on its machine
	if getenv(VarNodeCPUs) != "" {
		n, err := number(getenv, VarNodeCPUs)
		if err != nil {
			return err
		}
		l.NodeCPUs = int(n)
	}
	if fd := getenv(VarRootFD); fd != "" && l.Locality == 0 {
		if l.RootFD, err = strconv.Atoi(fd); err != nil {
			return fmt.Errorf("environment %s=%q: not a number", VarRootFD, fd)
		}
	}
	return nil
}

func (l *Launch) fromSlurm(getenv func(string) string) error {
	l.Source = Slurm
	var err error
	if l.NumLocalities, err = number(getenv, SlurmNTasks); err != nil {
		return err
	}
	if l.Locality, err = number(getenv, SlurmProcID); err != nil {
		return err
	}
	list := getenv(SlurmStepNodeList)
	if list == "" {
		list = getenv(SlurmNodeList)
	}
	hosts, err := ExpandHostlist(list)
	if err != nil {
		return fmt.Errorf("slurm node list: %w", err)
	}
	port := getenv(VarPort)
	if port == "" {
		job, _ := strconv.ParseUint(getenv(SlurmJobID), 10, 64)
		step, _ := strconv.ParseUint(getenv(SlurmStepID), 10, 64)
		port = strconv.FormatUint(RootPortBase+(job*16+step)%RootPortSpan, 10)
	}
	l.RootAddr = net.JoinHostPort(hosts[0], port)
	l.ListenHost = getenv(VarListenHost)
	// These only hint whether the cores are shared (the raw system calls):
	// a value that does not parse is reported, not refused, as the format
	// is slurm's.
	var warn string
	if l.NodeLocalities, warn = slurmNodeTasks(getenv); warn != "" {
		l.Warnings = append(l.Warnings, warn)
	}
	if v := getenv(SlurmCPUsOnNode); v != "" {
		if l.NodeCPUs, err = strconv.Atoi(v); err != nil {
			l.NodeCPUs = 0
			l.Warnings = append(l.Warnings, fmt.Sprintf("environment %s=%q is not a number; counting the machine's cores", SlurmCPUsOnNode, v))
		}
	}
	return nil
}

// slurmNodeTasks is the number of tasks of this step on this node, from
// SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) and SLURM_NODEID; 0
// when they do not say, with a warning when what they say does not parse.
func slurmNodeTasks(getenv func(string) string) (int, string) {
	name := SlurmStepTasksPerNode
	spec := getenv(name)
	if spec == "" {
		name = SlurmTasksPerNode
		spec = getenv(name)
	}
	if spec == "" {
		return 0, ""
	}
	node, err := strconv.Atoi(getenv(SlurmNodeID))
	if err != nil {
		return 0, fmt.Sprintf("environment %s=%q is not a number; the tasks on this node are not known", SlurmNodeID, getenv(SlurmNodeID))
	}
	n, err := tasksOnNode(spec, node)
	if err != nil {
		return 0, fmt.Sprintf("environment %s: %v; the tasks on this node are not known", name, err)
	}
	return n, ""
}

// InheritListener returns the listener a launcher passed as descriptor fd
// (Launch.RootFD). The descriptor is closed; the listener has its own.
func InheritListener(fd int) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), "tessera-root-listener")
	if f == nil {
		return nil, fmt.Errorf("fd %d is not open", fd)
	}
	defer f.Close()
	return net.FileListener(f)
}
