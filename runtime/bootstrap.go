package runtime

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/internal/jobenv"
	"github.com/tessera-amt/tessera/parcel"
)

// The parcelports a job can choose as Config.Transport (`tessera run
// --parcelport`, TESSERA_PARCELPORT) when Config.Parcelport is nil.
const (
	ParcelportTCP  = "tcp"  // Go's net (parcel.TCP) to every locality, this machine's too
	ParcelportNBIO = "nbio" // github.com/lesismal/nbio (parcel.NBIO)
	ParcelportSHM  = "shm"  // shared memory with localities on this machine, tcp to others (parcel.SHM); the default
	// ParcelportUCX is UCX active messages (parcel.UCX), in a build with
	// -tags ucx; elsewhere starting it fails, saying how to build it.
	ParcelportUCX = "ucx"
)

// checkTransport says whether name is a socket parcelport.
func checkTransport(name string) error {
	switch name {
	case "", ParcelportTCP, ParcelportNBIO, ParcelportSHM, ParcelportUCX:
		return nil
	}
	return fmt.Errorf("%q is not a parcelport (%s, %s, %s or %s)", name, ParcelportTCP, ParcelportNBIO, ParcelportSHM, ParcelportUCX)
}

// openTCPPort opens the tcp parcelport tc configures when transport is
// ParcelportTCP, and otherwise ("" or ParcelportSHM) the shared-memory
// port over it, which upgrades the connections to localities on this
// machine and leaves the others on tcp.
func openTCPPort(transport string, tc parcel.TCPConfig) (parcel.Parcelport, error) {
	if transport == ParcelportTCP {
		return parcel.NewTCP(tc)
	}
	return parcel.NewSHM(parcel.SHMConfig{TCPConfig: tc})
}

// fromEnvironment is Main's edge, the one place the runtime takes its
// configuration from the environment: cfg with what the launch in getenv
// (package jobenv) says filled into the fields cfg leaves zero, so that a
// field the program sets wins over the variable.
//
// The job (Locality, NumLocalities, RootAddr, ListenHost, Listener,
// Secret, NodeLocalities, NodeCPUs) comes from the environment only when
// cfg.NumLocalities is 0; without a launcher or slurm that is a job of one
// locality. A multi-locality job's secret comes from TESSERA_SECRET or the
// secret file (jobenv.Launch.LoadSecret, home being the user's home
// directory); inherit opens locality 0's inherited listener. The job's
// options (TESSERA_PARCELPORT, _PROGRESS, _TCP_CONGESTION, _METRICS_ADDR,
// _TRACE and the like) fill Transport, Progress, TCPCongestion,
// MetricsAddr and Trace. Errors name the variable and its value; the
// warnings are what could not be read but need not be.
func fromEnvironment(cfg Config, getenv func(string) string, home string, inherit func(fd int) (net.Listener, error)) (Config, []string, error) {
	l, err := jobenv.FromEnv(getenv)
	var warnings []string
	if cfg.NumLocalities == 0 {
		if err != nil {
			return cfg, nil, fmt.Errorf("runtime: %w", err)
		}
		if err := cfg.applyJob(l, home, inherit); err != nil {
			return cfg, nil, err
		}
		for _, w := range l.Warnings {
			warnings = append(warnings, "runtime: "+w)
		}
	}
	if err := cfg.applyOptions(l.Options); err != nil {
		return cfg, nil, err
	}
	return cfg, warnings, nil
}

// applyJob takes the job from l.
func (c *Config) applyJob(l jobenv.Launch, home string, inherit func(fd int) (net.Listener, error)) error {
	c.Locality, c.NumLocalities = l.Locality, l.NumLocalities
	c.RootAddr, c.ListenHost = l.RootAddr, l.ListenHost
	if c.NodeLocalities == 0 {
		c.NodeLocalities = l.NodeLocalities
	}
	if c.NodeCPUs == 0 {
		c.NodeCPUs = l.NodeCPUs
	}
	if l.RootFD != 0 && c.Locality == 0 && c.Listener == nil {
		var err error
		if c.Listener, err = inherit(l.RootFD); err != nil {
			return fmt.Errorf("runtime: locality 0: inherited root listener (%s=%d): %w", jobenv.VarRootFD, l.RootFD, err)
		}
	}
	if c.Secret == nil {
		if c.NumLocalities == 1 {
			c.Secret = make([]byte, 32)
			rand.Read(c.Secret)
		} else {
			var err error
			if c.Secret, err = l.LoadSecret(home); err != nil {
				return fmt.Errorf("runtime: locality %d: %w", c.Locality, err)
			}
		}
	}
	if c.NumLocalities == 1 && c.RootAddr == "" && c.Listener == nil {
		c.RootAddr = "127.0.0.1:0"
	}
	return nil
}

// applyOptions takes the options o sets into the fields c leaves zero,
// checking each against the variable it came from.
func (c *Config) applyOptions(o jobenv.Options) error {
	bad := func(name, value string, err error) error {
		return fmt.Errorf("runtime: locality %d: environment %s=%q: %w", c.Locality, name, value, err)
	}
	if c.Parcelport == nil && c.Transport == "" && o.Parcelport != "" {
		if err := checkTransport(o.Parcelport); err != nil {
			return fmt.Errorf("runtime: locality %d: environment %s=%q: not a parcelport (%s, %s, %s or %s)",
				c.Locality, jobenv.VarParcelport, o.Parcelport, ParcelportTCP, ParcelportNBIO, ParcelportSHM, ParcelportUCX)
		}
		c.Transport = o.Parcelport
	}
	if c.Progress == ProgressDefault && o.Progress != "" {
		p, err := parseProgress(o.Progress)
		if err != nil {
			return fmt.Errorf("runtime: locality %d: environment %s: %w", c.Locality, jobenv.VarProgress, err)
		}
		c.Progress = p
	}
	if c.TCPCongestion == "" {
		c.TCPCongestion = o.TCPCongestion
	}
	if c.MetricsAddr == "" && o.MetricsAddr != "" {
		if _, err := jobenv.MetricsListenAddr(o.MetricsAddr, c.Locality); err != nil {
			return bad(jobenv.VarMetricsAddr, o.MetricsAddr, err)
		}
		c.MetricsAddr = o.MetricsAddr
	}
	t := &c.Trace
	if t.Dir == "" {
		t.Dir = o.Trace
	}
	if t.Formats == nil && o.TraceFormat != "" {
		for _, f := range strings.Split(o.TraceFormat, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if err := checkTraceFormat(f); err != nil {
				return bad(jobenv.VarTraceFormat, o.TraceFormat, err)
			}
			t.Formats = append(t.Formats, f)
		}
	}
	if t.Profile == "" && o.Profile != "" {
		if err := checkProfile(o.Profile); err != nil {
			return bad(jobenv.VarProfile, o.Profile, err)
		}
		t.Profile = o.Profile
	}
	if t.Sample == 0 && o.TraceSample != "" {
		d, err := time.ParseDuration(o.TraceSample)
		if err != nil || d == 0 {
			return bad(jobenv.VarTraceSample, o.TraceSample, fmt.Errorf("want a duration such as 100ms (negative: no sampler)"))
		}
		t.Sample = d
	}
	return nil
}

// openPort opens the socket parcelport cfg.Transport names, listening on
// cfg.Listener or a port of its own.
func (rt *Runtime) openPort() (parcel.Parcelport, error) {
	if rt.cfg.Parcelport != nil {
		return rt.cfg.Parcelport((*portHandler)(rt))
	}
	ln := rt.cfg.Listener
	if ln == nil {
		addr := net.JoinHostPort(rt.cfg.ListenHost, "0")
		if rt.here == 0 {
			_, port, err := net.SplitHostPort(rt.cfg.RootAddr)
			if err != nil {
				return nil, fmt.Errorf("runtime: root address %q: %w", rt.cfg.RootAddr, err)
			}
			addr = net.JoinHostPort(rt.cfg.ListenHost, port)
		}
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("runtime: locality %d: listening on %s: %w", rt.here, addr, err)
		}
	}
	pc := parcel.PortConfig{
		Locality:          rt.here,
		Listener:          ln,
		Secret:            rt.cfg.Secret,
		Handler:           (*portHandler)(rt),
		MaxFrame:          rt.cfg.MaxFrame,
		HeartbeatInterval: rt.cfg.HeartbeatInterval,
		HeartbeatTimeout:  rt.cfg.HeartbeatTimeout,
		Logger:            rt.cfg.Logger,
	}
	if rt.cfg.Transport == ParcelportUCX {
		port, err := parcel.NewUCX(parcel.UCXConfig{PortConfig: pc, PollFor: rt.cfg.Progress.pollFor()})
		if err != nil {
			ln.Close()
			return nil, err // it names the locality
		}
		return port, nil
	}
	if rt.cfg.Transport == ParcelportNBIO {
		port, err := parcel.NewNBIO(parcel.NBIOConfig{PortConfig: pc})
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("runtime: locality %d: %w", rt.here, err)
		}
		return port, nil
	}
	port, err := openTCPPort(rt.cfg.Transport, parcel.TCPConfig{
		PortConfig: pc,
		PollFor:    rt.cfg.Progress.pollFor(),
		Congestion: rt.cfg.TCPCongestion,
		RawReads:   rt.cfg.NodeLocalities > rt.cfg.NodeCPUs,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	return port, nil
}

// advertised is the address peers dial to reach this locality.
func (rt *Runtime) advertised() string {
	addr := rt.port.Addr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}
