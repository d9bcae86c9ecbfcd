// Package agas is Tessera's active global address space: it gives every
// distributed object — above all the tiles of distributed arrays — a global
// id that any locality can use without knowing where the object lives,
// routes calls to wherever the object is now, moves objects between
// localities while work on them is in flight, and keeps the symbolic
// namespace in which programs find each other's objects by name.
//
// agas names, finds and moves objects; it does not own the wire (package
// parcel) or tasks (package runtime): everything here travels as runtime
// actions.
//
// # Pieces
//
//   - GID: 64 bits, the home locality (the one that created the object,
//     which always knows where it is) and a sequence number.
//   - Components: Create makes a value a component on this locality,
//     CreateOn on another (the value travels like a migrating object);
//     RegisterMethod declares a method of its type; Call runs a method by
//     GID from any locality. Each locality caches where objects live; a call
//     that reaches a locality the object left is forwarded, and the caller
//     is told the new owner. Calls from one locality to one object run in
//     the order it made them, even across migrations.
//   - Readers: RegisterReader declares a read-only method whose result is
//     bulk float64s (a block of a tile); ReadInto runs it by GID wherever
//     the object lives and reads the reply straight into the caller's
//     slice. Reads are not ordered and run side by side, but never overlap
//     a migration: a read that reaches a locality the object left is
//     forwarded, and the caller's cache is corrected before it has the
//     reply. IsLocal and Owner tell, without a message, whether an object
//     lives here and where this locality believes it lives (certain on
//     its home).
//   - Resolution: a call or read goes to the object itself when it lives
//     here, else to the owner in this locality's cache (a map look-up),
//     else to the object's home, which forwards it; no separate resolve
//     message is sent.
//   - Migrate moves an object (its type implements runtime.ParcelMarshaler
//     and ParcelUnmarshaler; bulk state travels as raw chunks). An object
//     that implements Mover is told its new locality on arrival, so a tile
//     can update the locality in its annotation.
//   - Lifetime: Free, or reference counting with AddRef/Release (see
//     lifetime.go for the rule).
//   - Namespace: RegisterWithBasename, FindFromBasename, FindAll and
//     Unregister with HPX's semantics — the name is /base/seq; a find
//     returns a future that becomes ready when the name is registered, now
//     or later; a taken name is an error (ErrNameTaken). Names are spread
//     over the localities by hash.
//   - Counters: resolutions, cache hits and misses, forwarded calls,
//     migrations and live objects per locality.
//
// # Use
//
//	reg := runtime.NewRegistry()
//	s := agas.New(reg) // before the runtime starts
//	inc := agas.RegisterMethod(reg, s, "counter.inc",
//		func(ctx context.Context, c *Counter, n int) (int, error) { c.N += n; return c.N, nil })
//	...
//	// in the program's body, on one locality
//	gid := agas.Create(s, rt, &Counter{})
//	s.RegisterWithBasename(ctx, rt, "counter", gid, 0).Err(ctx)
//	// on any locality
//	gid, err := s.FindFromBasename(ctx, rt, "counter", 0).Get(ctx)
//	n, err := agas.Call(ctx, s, rt, gid, inc, 1).Get(ctx)
//	err = s.Migrate(ctx, rt, gid, 2)
//
// The tiles of distributed arrays are components of package primitives:
// their fetches are Readers, and primitives.MigrateTile moves one.
package agas
