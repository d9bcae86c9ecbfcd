// Package agas is Tessera's active global address space: it gives every
// distributed object — above all the tiles of distributed arrays — a global
// id that any locality can use without knowing where the object lives,
// resolves ids to their current owner, keeps the symbolic namespace
// (register and find by basename and sequence number), and migrates objects
// between localities while work on them is in flight.
//
// agas names and finds objects; it moves no bytes itself (package parcel
// does) and runs no tasks (package runtime does).
//
// The package is being built; this comment states its role in the layout.
package agas
