package runtime

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/tessera-amt/tessera/parcel"
)

// The environment a locality reads when Config leaves the job unset.
//
// Set by `tessera run`:
//
//	TESSERA_LOCALITY, TESSERA_NUM_LOCALITIES  this locality and the job size
//	TESSERA_NODE_CPUS                         the cores the localities share
//	TESSERA_ROOT_ADDR                         host:port of locality 0
//	TESSERA_ROOT_FD                           (locality 0) inherited listener
//	TESSERA_LISTEN_HOST                       host to listen on
//	TESSERA_SECRET                            the job secret, hex
//	TESSERA_PARCELPORT                        tcp (default) or nbio
//	TESSERA_PROGRESS                          block (default) or poll
//	TESSERA_TCP_CONGESTION                    the tcp parcelport's TCP congestion control
//
// Under slurm (srun), from slurm's own variables: SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_NODELIST (or SLURM_NODELIST) in
// hostlist syntax, SLURM_JOB_ID, SLURM_STEP_ID, and SLURM_NODEID with
// SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) and
// SLURM_CPUS_ON_NODE for the localities on this node and their cores. Locality 0 is task 0 on the
// first host of the node list and listens on TESSERA_PORT, or on a port
// derived from the job and step ids so that concurrent steps do not clash;
// every other locality listens on a port of the kernel's choosing, so
// several localities per node never collide. The secret comes from
// TESSERA_SECRET or the file TESSERA_SECRET_FILE (default ~/.tessera/secret,
// created 0600 when missing).
//
// With neither, the program runs as a job of one locality.
//
// Tracing, read by Start for the Config.Trace fields left unset (see
// TraceConfig; `tessera run --trace DIR --trace-format F --profile P`
// sets the first three):
//
//	TESSERA_TRACE         directory of the run's OTF2 archive
//	TESSERA_TRACE_FORMAT  otf2 (default), or otf2,perfetto
//	TESSERA_PROFILE       screen or csv: the job's profile at exit
//	TESSERA_TRACE_SAMPLE  the sampler's period (default 100ms)

// Slurm root port range: RootPortBase + (job*16+step) % RootPortSpan.
const (
	RootPortBase = 17000
	RootPortSpan = 16000
)

func (c *Config) fromEnvironment() error {
	home, _ := os.UserHomeDir()
	return c.loadEnv(os.Getenv, home, func(fd int) (net.Listener, error) {
		f := os.NewFile(uintptr(fd), "tessera-root-listener")
		if f == nil {
			return nil, fmt.Errorf("fd %d is not open", fd)
		}
		defer f.Close()
		return net.FileListener(f)
	})
}

// loadEnv fills the job fields of c from getenv.
func (c *Config) loadEnv(getenv func(string) string, home string, inherit func(fd int) (net.Listener, error)) error {
	num := func(name string) (uint32, error) {
		v, err := strconv.ParseUint(getenv(name), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("runtime: environment %s=%q: not a number", name, getenv(name))
		}
		return uint32(v), nil
	}
	var err error
	switch {
	case getenv("TESSERA_NUM_LOCALITIES") != "":
		if c.NumLocalities, err = num("TESSERA_NUM_LOCALITIES"); err != nil {
			return err
		}
		if c.Locality, err = num("TESSERA_LOCALITY"); err != nil {
			return err
		}
		c.RootAddr = getenv("TESSERA_ROOT_ADDR")
		c.ListenHost = getenv("TESSERA_LISTEN_HOST")
		if c.NodeLocalities == 0 {
			c.NodeLocalities = int(c.NumLocalities) // tessera run starts all on this machine
		}
		if v := getenv("TESSERA_NODE_CPUS"); v != "" && c.NodeCPUs == 0 {
			n, err := num("TESSERA_NODE_CPUS")
			if err != nil {
				return err
			}
			c.NodeCPUs = int(n)
		}
		if fd := getenv("TESSERA_ROOT_FD"); fd != "" && c.Locality == 0 && c.Listener == nil {
			n, err := strconv.Atoi(fd)
			if err != nil {
				return fmt.Errorf("runtime: environment TESSERA_ROOT_FD=%q: not a number", fd)
			}
			if c.Listener, err = inherit(n); err != nil {
				return fmt.Errorf("runtime: inherited root listener (TESSERA_ROOT_FD=%d): %w", n, err)
			}
		}
	case getenv("SLURM_NTASKS") != "" && getenv("SLURM_PROCID") != "":
		if c.NumLocalities, err = num("SLURM_NTASKS"); err != nil {
			return err
		}
		if c.Locality, err = num("SLURM_PROCID"); err != nil {
			return err
		}
		list := getenv("SLURM_STEP_NODELIST")
		if list == "" {
			list = getenv("SLURM_NODELIST")
		}
		hosts, err := ExpandHostlist(list)
		if err != nil {
			return fmt.Errorf("runtime: slurm node list: %w", err)
		}
		port := getenv("TESSERA_PORT")
		if port == "" {
			job, _ := strconv.ParseUint(getenv("SLURM_JOB_ID"), 10, 64)
			step, _ := strconv.ParseUint(getenv("SLURM_STEP_ID"), 10, 64)
			port = strconv.FormatUint(RootPortBase+(job*16+step)%RootPortSpan, 10)
		}
		c.RootAddr = net.JoinHostPort(hosts[0], port)
		c.ListenHost = getenv("TESSERA_LISTEN_HOST")
		// These only hint whether the cores are shared (the raw system
		// calls): a value that does not parse is reported, not refused, as
		// the format is slurm's.
		if c.NodeLocalities == 0 {
			var warn string
			if c.NodeLocalities, warn = slurmNodeTasks(getenv); warn != "" {
				c.envWarnings = append(c.envWarnings, warn)
			}
		}
		if v := getenv("SLURM_CPUS_ON_NODE"); c.NodeCPUs == 0 && v != "" {
			var err error
			if c.NodeCPUs, err = strconv.Atoi(v); err != nil {
				c.envWarnings = append(c.envWarnings, fmt.Sprintf("runtime: environment SLURM_CPUS_ON_NODE=%q is not a number; counting the machine's cores", v))
			}
		}
	default:
		c.NumLocalities, c.Locality = 1, 0
	}
	if c.Secret == nil {
		if c.NumLocalities == 1 {
			c.Secret = make([]byte, 32)
			rand.Read(c.Secret)
		} else if c.Secret, err = LoadSecret(getenv, home); err != nil {
			return err
		}
	}
	if c.NumLocalities == 1 && c.RootAddr == "" && c.Listener == nil {
		c.RootAddr = "127.0.0.1:0"
	}
	return nil
}

// slurmNodeTasks is the number of tasks of this step on this node, from
// SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) and SLURM_NODEID; 0
// when they do not say, with a warning when what they say does not parse.
func slurmNodeTasks(getenv func(string) string) (int, string) {
	name := "SLURM_STEP_TASKS_PER_NODE"
	spec := getenv(name)
	if spec == "" {
		name = "SLURM_TASKS_PER_NODE"
		spec = getenv(name)
	}
	if spec == "" {
		return 0, ""
	}
	node, err := strconv.Atoi(getenv("SLURM_NODEID"))
	if err != nil {
		return 0, fmt.Sprintf("runtime: environment SLURM_NODEID=%q is not a number; the tasks on this node are not known", getenv("SLURM_NODEID"))
	}
	n, err := tasksOnNode(spec, node)
	if err != nil {
		return 0, fmt.Sprintf("runtime: environment %s: %v; the tasks on this node are not known", name, err)
	}
	return n, ""
}

// The parcelports a job can choose with TESSERA_PARCELPORT (set by
// `tessera run --parcelport`) when Config.Parcelport is nil.
const (
	ParcelportTCP  = "tcp"  // Go's net (parcel.TCP); the default
	ParcelportNBIO = "nbio" // github.com/lesismal/nbio (parcel.NBIO)
)

// envParcelport opens the parcelport TESSERA_PARCELPORT names with pc, or
// returns nil, nil for the default, TCP. On an error pc.Listener is closed.
func (rt *Runtime) envParcelport(pc parcel.PortConfig) (parcel.Parcelport, error) {
	switch v := os.Getenv("TESSERA_PARCELPORT"); v {
	case "", ParcelportTCP:
		return nil, nil
	case ParcelportNBIO:
		port, err := parcel.NewNBIO(parcel.NBIOConfig{PortConfig: pc})
		if err != nil {
			pc.Listener.Close()
			return nil, fmt.Errorf("runtime: locality %d: %w", rt.here, err)
		}
		return port, nil
	default:
		pc.Listener.Close()
		return nil, fmt.Errorf("runtime: locality %d: environment TESSERA_PARCELPORT=%q: not a parcelport (%s or %s)",
			rt.here, v, ParcelportTCP, ParcelportNBIO)
	}
}
