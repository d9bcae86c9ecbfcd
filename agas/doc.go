// Package agas is Tessera's active global address space: it gives every
// distributed object — above all the tiles of distributed arrays — a global
// id that any locality can use without knowing where the object lives, and
// keeps the symbolic namespace in which programs find each other's objects
// by name.
//
// agas names and finds objects; it moves no bytes itself (package parcel
// does) and runs no tasks (package runtime does).
//
// What exists so far:
//
//   - GID: 64 bits, the home locality (the one that created the object) and
//     a sequence number.
//   - Namespace: RegisterWithBasename, FindFromBasename, FindAll and
//     Unregister with HPX's semantics — the name is /base/seq; a find
//     returns a future that becomes ready when the name is registered, now
//     or later; a taken name is an error (ErrNameTaken). Names are spread
//     over the localities by hash, so no locality holds the whole table.
//
// Components (objects created on a locality and called by GID), the
// resolution cache, forwarding, migration and object lifetime are being
// built.
//
// # Use
//
//	reg := runtime.NewRegistry()
//	ns := agas.NewNamespace(reg) // before the runtime starts
//	...
//	// on one locality
//	ns.RegisterWithBasename(ctx, rt, "solver", gid, 0).Err(ctx)
//	// on any other, before or after
//	gid, err := ns.FindFromBasename(ctx, rt, "solver", 0).Get(ctx)
package agas
