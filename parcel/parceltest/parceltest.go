package parceltest

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// HangLimit bounds every wait of the suite: it catches hangs, and is never
// a measure of speed.
const HangLimit = 10 * time.Second

// Options is how the suite starts one locality's parcelport. Zero values
// mean the transport's defaults.
type Options struct {
	Locality uint32         // this locality's id
	Handler  parcel.Handler // receives what the port reads; never nil
	Secret   []byte         // the job secret: 32 bytes, the same for a job unless a subtest says otherwise
	Logger   *slog.Logger   // never nil

	MaxFrame          int64         // largest frame body accepted (FrameLimit)
	HeartbeatInterval time.Duration // idle time before a heartbeat (Heartbeats)
	HeartbeatTimeout  time.Duration // silence after which a peer is down (Heartbeats)
}

// Job is one job of the transport under test: localities that can reach
// one another. Every subtest gets a fresh one.
type Job struct {
	// Start starts the parcelport of locality o.Locality. The suite closes
	// it. Other localities reach it with Connect(ctx, o.Locality, Addr()).
	Start func(o Options) (parcel.Parcelport, error)
	// Kill, if not nil, makes locality id vanish as if its process had
	// died: no goodbye, and its peers must be told it is down.
	Kill func(id uint32)
}

// Transport is a parcelport implementation under test.
type Transport struct {
	// NewJob prepares a job for one subtest. What the job needs torn down
	// besides its ports it registers with t.Cleanup.
	NewJob func(t testing.TB) Job

	// Dial, if not nil, opens a byte stream to the port listening at addr
	// and runs the transport's handshake on it as locality self, expecting
	// to reach locality want, proving secret. The stream then carries
	// frames (parcel.AppendFrameHead and the chunks) both ways, as the
	// port's own connections do, and the suite writes hostile, cut and
	// corrupt frames on it. nil: the transport has no byte stream to write
	// into (inproc), and those subtests are skipped.
	Dial func(ctx context.Context, addr string, self, want uint32, secret []byte) (net.Conn, error)

	// Caps declares what optional behaviour the transport has.
	Caps Caps
}

// Caps is a set of optional behaviours of a transport.
type Caps uint

const (
	// Authenticates: peers prove the job secret before anything they send
	// is decoded.
	Authenticates Caps = 1 << iota
	// Heartbeats: the port keeps idle connections alive and reports a peer
	// silent for Options.HeartbeatTimeout down.
	Heartbeats
	// FrameLimit: the port honours Options.MaxFrame when sending and
	// reading.
	FrameLimit
)

var capNames = []string{"Authenticates", "Heartbeats", "FrameLimit"}

// String names the capabilities in c.
func (c Caps) String() string {
	var names []string
	for i, n := range capNames {
		if c&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// testSecret is the job secret of the suite's localities; otherSecret is
// one that is not.
var (
	testSecret  = []byte("tessera-parceltest-job-secret-32")
	otherSecret = []byte("not-the-job-secret-of-this-suite")
)

// Run runs the conformance suite against tr, one subtest per behaviour
// (see the package documentation). Subtests that need a capability tr does
// not declare are skipped, naming it.
func Run(t *testing.T, tr Transport) {
	if tr.NewJob == nil {
		t.Fatal("parceltest: Transport.NewJob is nil")
	}
	s := &suite{tr: tr}
	for _, st := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Exchange", s.exchange},
		{"Ordering", s.ordering},
		{"LargePayloads", s.largePayloads},
		{"Counters", s.counters},
		{"CountersWhileBusy", s.countersWhileBusy},
		{"InvalidParcelsCostNothing", s.invalidParcels},
		{"SendUnconnected", s.sendUnconnected},
		{"CloseIsGoodbye", s.closeIsGoodbye},
		{"SendAfterClose", s.sendAfterClose},
		{"CloseWhileSending", s.closeWhileSending},
		{"DeadPeer", s.deadPeer},
		{"HostileFrames", s.hostileFrames},
		{"TruncatedFrame", s.truncatedFrame},
		{"OversizedFrame", s.oversizedFrame},
		{"SendTooLarge", s.sendTooLarge},
		{"WrongSecret", s.wrongSecret},
		{"IdlePeersStayUp", s.idlePeersStayUp},
		{"SilentPeer", s.silentPeer},
	} {
		t.Run(st.name, st.run)
	}
}

// suite is one run of the suite against a transport.
type suite struct{ tr Transport }

// need skips t unless the transport has caps.
func (s *suite) need(t *testing.T, caps Caps) {
	t.Helper()
	if missing := caps &^ s.tr.Caps; missing != 0 {
		t.Skipf("the transport does not declare %v", missing)
	}
}

// needDial skips t unless the transport has a byte stream.
func (s *suite) needDial(t *testing.T) {
	t.Helper()
	if s.tr.Dial == nil {
		t.Skip("the transport has no byte stream (Transport.Dial is nil)")
	}
}

// job is a job of the transport under test in one subtest.
type job struct {
	Job
	t   *testing.T
	log *slog.Logger
}

func (s *suite) newJob(t *testing.T) *job {
	t.Helper()
	j := s.tr.NewJob(t)
	if j.Start == nil {
		t.Fatal("parceltest: Job.Start is nil")
	}
	return &job{Job: j, t: t, log: testLogger(t)}
}

// start starts locality o.Locality with the job secret and the test's
// logger unless o says otherwise; the port is closed when the test ends.
func (j *job) start(o Options) parcel.Parcelport {
	j.t.Helper()
	if o.Secret == nil {
		o.Secret = testSecret
	}
	if o.Logger == nil {
		o.Logger = j.log
	}
	p, err := j.Start(o)
	if err != nil {
		j.t.Fatalf("starting locality %d: %v", o.Locality, err)
	}
	j.t.Cleanup(func() { closeAll(j.t, []parcel.Parcelport{p}) })
	return p
}

// startN starts n localities with recorders, configured by setup (if not
// nil) before they start, and connects them: locality i dials every j < i.
// Once they are closed at the end of the test, it checks that none was ever
// told a peer is down.
func (s *suite) startN(t *testing.T, n int, setup func(i int, r *recorder, o *Options)) ([]parcel.Parcelport, []*recorder) {
	t.Helper()
	j := s.newJob(t)
	recs := make([]*recorder, n)
	t.Cleanup(func() { // runs after the ports are closed
		for i, r := range recs {
			if r == nil {
				continue
			}
			for _, d := range r.peerDowns() {
				t.Errorf("locality %d was told locality %d is down: %v", i, d.peer, d.err)
			}
		}
	})
	ports := make([]parcel.Parcelport, n)
	for i := range n {
		recs[i] = newRecorder()
		o := Options{Locality: uint32(i), Handler: recs[i]}
		if setup != nil {
			setup(i, recs[i], &o)
		}
		ports[i] = j.start(o)
	}
	connectAll(t, ports)
	return ports, recs
}

func connectAll(t *testing.T, ports []parcel.Parcelport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), HangLimit)
	defer cancel()
	for i := range ports {
		for j := range i {
			if err := ports[i].Connect(ctx, uint32(j), ports[j].Addr()); err != nil {
				t.Fatalf("locality %d connecting to %d: %v", i, j, err)
			}
		}
	}
}

func closeAll(t testing.TB, ports []parcel.Parcelport) {
	for i, p := range ports {
		done := make(chan error, 1)
		go func() { done <- p.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("closing locality %d: %v", i, err)
			}
		case <-time.After(HangLimit):
			t.Errorf("closing locality %d hangs", i)
		}
	}
}

// dial opens a byte stream to port as locality self, closed when the test
// ends.
func (s *suite) dial(t *testing.T, port parcel.Parcelport, self, want uint32) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), HangLimit)
	defer cancel()
	c, err := s.tr.Dial(ctx, port.Addr(), self, want, testSecret)
	if err != nil {
		t.Fatalf("dialing locality %d as %d: %v", want, self, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(HangLimit))
	return c
}

// waitFor polls cond until it holds; it fails the test after HangLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(HangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, HangLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLogger logs to t until the test's cleanup.
func testLogger(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, nil))
}

type testLogWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLogWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}

// logBuffer is a logger's output kept for a test to read.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
