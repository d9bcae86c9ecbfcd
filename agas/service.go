package agas

import (
	"sync"
	"sync/atomic"

	"github.com/tessera-amt/tessera/runtime"
)

// Service is AGAS for one program: the symbolic namespace and the objects
// (components) that live on the localities, callable by GID. Make one with
// New before the runtime starts — it registers its actions — and register
// the component methods on it with RegisterMethod; every locality then uses
// it with its own Runtime.
type Service struct {
	register   runtime.Action[nameEntry, struct{}]
	find       runtime.Action[string, GID]
	unregister runtime.Action[string, GID]
	rebind     runtime.Action[rebindReq, struct{}]
	hint       runtime.Action[rebindReq, struct{}]
	free       runtime.Action[GID, struct{}]
	migrate    runtime.Action[rebindReq, struct{}]
	adopt      runtime.Action[adoption, struct{}]
	ref        runtime.Action[refReq, struct{}]
	create     runtime.Action[adoption, GID]

	mu     sync.Mutex
	locals map[*runtime.Runtime]*local
	types  map[string]func() migratable // by type name, for migration
}

// New returns reg's AGAS service, registering AGAS's actions in reg on
// the first call: one service per registry, shared by everything that
// asks for it (primitives.Register takes it too), so calling New again
// on the same registry returns the same service.
func New(reg *runtime.Registry) *Service {
	return runtime.Shared(reg, "agas", func() *Service { return newService(reg) })
}

// newService makes the service and registers its actions.
func newService(reg *runtime.Registry) *Service {
	s := &Service{locals: make(map[*runtime.Runtime]*local), types: make(map[string]func() migratable)}
	reg.RegisterErrors(ErrNameTaken, ErrNoName, ErrFreed, ErrUnknownGID)
	s.register = runtime.Register(reg, "agas.name.register", s.serveRegister)
	s.find = runtime.Register(reg, "agas.name.find", s.serveFind)
	s.unregister = runtime.Register(reg, "agas.name.unregister", s.serveUnregister)
	s.rebind = runtime.Register(reg, "agas.rebind", s.serveRebind)
	s.hint = runtime.Register(reg, "agas.hint", s.serveHint)
	s.free = runtime.Register(reg, "agas.free", s.serveFree)
	s.migrate = runtime.Register(reg, "agas.migrate", s.serveMigrate)
	s.adopt = runtime.Register(reg, "agas.adopt", s.serveAdopt)
	s.ref = runtime.Register(reg, "agas.ref", s.serveRef)
	s.create = runtime.Register(reg, "agas.create", s.serveCreate)
	return s
}

// local is AGAS's state on one locality.
type local struct {
	rt    *runtime.Runtime
	names *nameTable

	mu      sync.Mutex
	seq     uint64          // objects created here so far
	objects map[GID]*object // objects living here
	owners  map[GID]uint32  // for objects homed here: where each lives now
	moved   map[GID]uint32  // objects that left: where they went
	cache   map[GID]uint32  // resolution cache: owner as last known
	sendSeq map[GID]uint64  // calls sent from here to each object

	resolutions, cacheHits, cacheMisses, forwarded, migrations atomic.Uint64
}

func (s *Service) local(rt *runtime.Runtime) *local {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locals[rt]
	if l == nil {
		l = &local{
			rt:      rt,
			names:   &nameTable{names: make(map[string]GID), waiters: make(map[string][]func(GID, error) bool)},
			objects: make(map[GID]*object),
			owners:  make(map[GID]uint32),
			moved:   make(map[GID]uint32),
			cache:   make(map[GID]uint32),
			sendSeq: make(map[GID]uint64),
		}
		s.locals[rt] = l
		// Its counters go into the locality's metrics (metrics.go).
		rt.AddCounterSource(counterSource{s, rt})
		go func() { // forget the state when its locality ends
			<-rt.Done()
			s.mu.Lock()
			delete(s.locals, rt)
			s.mu.Unlock()
		}()
	}
	return l
}

// Counters is AGAS's work on one locality.
type Counters struct {
	Resolutions uint64 // owner lookups for calls sent from here
	CacheHits   uint64 // ... answered by the cache
	CacheMisses uint64 // ... sent to the home instead
	Forwarded   uint64 // calls that arrived here for an object elsewhere and were passed on
	Migrations  uint64 // objects that left this locality
	LiveObjects int    // objects living here now
}

// Counters returns AGAS's counters on rt's locality.
func (s *Service) Counters(rt *runtime.Runtime) Counters {
	l := s.local(rt)
	l.mu.Lock()
	live := len(l.objects)
	l.mu.Unlock()
	return Counters{
		Resolutions: l.resolutions.Load(),
		CacheHits:   l.cacheHits.Load(),
		CacheMisses: l.cacheMisses.Load(),
		Forwarded:   l.forwarded.Load(),
		Migrations:  l.migrations.Load(),
		LiveObjects: live,
	}
}
