package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
)

// sparseRows is a block of consecutive rows of the ratings matrix in
// compressed sparse row form: row first+r holds the columns
// col[ptr[r]:ptr[r+1]] (ascending) with the ratings val[ptr[r]:ptr[r+1]].
// A locality keeps its users as the rows of one (the user-item matrix) and
// its items as the rows of another (the transposed, item-user matrix).
//
// A rating costs 8 bytes here: an int32 column index and a float32 rating
// (MovieLens ratings are halves and whole numbers, exact in float32); the
// solvers widen them to float64 as they read them.
type sparseRows struct {
	first int
	ptr   []int
	col   []int32
	val   []float32
}

// rows returns the number of rows held.
func (s *sparseRows) rows() int { return len(s.ptr) - 1 }

// nnz returns the number of ratings held.
func (s *sparseRows) nnz() int { return len(s.col) }

// row returns the columns and ratings of local row r.
func (s *sparseRows) row(r int) ([]int32, []float32) {
	return s.col[s.ptr[r]:s.ptr[r+1]], s.val[s.ptr[r]:s.ptr[r+1]]
}

// empty returns the number of rows without ratings.
func (s *sparseRows) empty() int {
	n := 0
	for r := range s.rows() {
		if s.ptr[r] == s.ptr[r+1] {
			n++
		}
	}
	return n
}

// triple is one rating: a user, an item and the rating, 12 bytes. While a
// file is read the user and item are its ids; after the ids are mapped,
// dense indices.
type triple struct {
	user, item int32
	rating     float32
}

// ratings is one locality's share of the ratings: the rows of its users
// and of its items, and the original ids of every user and item (index ->
// id). Only locality 0, which writes the factors, holds the ids of a file
// read; the generator's are index + 1 everywhere.
type ratings struct {
	users, items int
	byUser       sparseRows // rows: this locality's users; columns: items
	byItem       sparseRows // rows: this locality's items; columns: users
	userIDs      []int64
	itemIDs      []int64
}

// span returns locality k's rows [start, stop) of n rows cut in parts:
// the first n % parts parts get one row more (the row tiling of annotate).
func span(n, parts, k int) (int, int) {
	base, extra := n/parts, n%parts
	start := k*base + min(k, extra)
	stop := start + base
	if k < extra {
		stop++
	}
	return start, stop
}

// owner returns the locality that owns row r of n rows cut in parts.
func owner(n, parts, r int) int {
	base, extra := n/parts, n%parts
	if r < extra*(base+1) {
		return r / (base + 1)
	}
	return extra + (r-extra*(base+1))/base
}

// recordBytes is the size of a rating on the wire: user and item as
// little-endian int32, the rating as a float32.
const recordBytes = 12

func putRecord(b []byte, t triple) {
	binary.LittleEndian.PutUint32(b, uint32(t.user))
	binary.LittleEndian.PutUint32(b[4:], uint32(t.item))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(t.rating))
}

func getRecord(b []byte) triple {
	return triple{
		user:   int32(binary.LittleEndian.Uint32(b)),
		item:   int32(binary.LittleEndian.Uint32(b[4:])),
		rating: math.Float32frombits(binary.LittleEndian.Uint32(b[8:])),
	}
}

// exchangeBlock is what one locality sends another in distribute: the
// count of ratings for the receiver's users, then those ratings, then the
// ratings for its items, all as records of recordBytes, in []float64 (the
// collectives' element type) viewed as bytes.
type exchangeBlock []float64

func newExchangeBlock(forUsers, forItems int) exchangeBlock {
	b := make(exchangeBlock, 1+(recordBytes*(forUsers+forItems)+7)/8)
	b[0] = float64(forUsers)
	return b
}

func (b exchangeBlock) records() []byte {
	if len(b) == 0 {
		return nil
	}
	return parcel.Float64Bytes(b[1:])
}

func (b exchangeBlock) forUsers() int {
	if len(b) == 0 {
		return 0
	}
	return int(b[0])
}

// distribute sends every triple (dense indices) to the locality that owns
// its user and to the one that owns its item, and builds this locality's
// rows from what arrives. One AllToAllV carries both; what stays here is
// read from local directly, never copied into a block. The blocks hold 24
// bytes per local rating (12 each way), which with local is the most the
// exchange holds at once; the rows then take 16 bytes per rating held
// (8 each way).
//
// It returns a pair rated twice (dense user and item) if there is one
// among this locality's users.
func distribute(ctx context.Context, comm *runtime.Communicator, here, parts, users, items int, chunks [][]triple) (byUser, byItem sparseRows, dup *triple, err error) {
	each := func(fn func(t triple)) {
		for _, c := range chunks {
			for _, t := range c {
				fn(t)
			}
		}
	}
	nu := make([]int, parts)
	ni := make([]int, parts)
	each(func(t triple) {
		nu[owner(users, parts, int(t.user))]++
		ni[owner(items, parts, int(t.item))]++
	})
	blocks := make([][]float64, parts)
	fill := make([]int, parts) // records written into each block
	for d := range parts {
		if d != here {
			blocks[d] = newExchangeBlock(nu[d], ni[d])
		}
	}
	itemFill := make([]int, parts)
	if parts > 1 {
		each(func(t triple) {
			if d := owner(users, parts, int(t.user)); d != here {
				putRecord(exchangeBlock(blocks[d]).records()[fill[d]*recordBytes:], t)
				fill[d]++
			}
			if d := owner(items, parts, int(t.item)); d != here {
				putRecord(exchangeBlock(blocks[d]).records()[(nu[d]+itemFill[d])*recordBytes:], t)
				itemFill[d]++
			}
		})
	}
	var got [][]float64
	if parts > 1 {
		got, err = comm.AllToAllV(ctx, blocks).Get(ctx)
		if err != nil {
			return sparseRows{}, sparseRows{}, nil, fmt.Errorf("distributing the ratings: %w", err)
		}
	}
	blocks = nil
	u0, u1 := span(users, parts, here)
	i0, i1 := span(items, parts, here)
	// visit calls fn for every rating that is this locality's: for its
	// users (items false) or for its items.
	visit := func(itemSide bool, fn func(t triple)) {
		for d := range parts {
			if d == here {
				each(func(t triple) {
					if !itemSide && int(t.user) >= u0 && int(t.user) < u1 || itemSide && int(t.item) >= i0 && int(t.item) < i1 {
						fn(t)
					}
				})
				continue
			}
			b := exchangeBlock(got[d])
			recs, n := b.records(), b.forUsers()
			lo, hi := 0, n
			if itemSide {
				lo, hi = n, len(recs)/recordBytes
			}
			for j := lo; j < hi; j++ {
				fn(getRecord(recs[j*recordBytes:]))
			}
		}
	}
	byUser = buildRows(u0, u1, func(fn func(row, col int32, v float32)) {
		visit(false, func(t triple) { fn(t.user, t.item, t.rating) })
	})
	byItem = buildRows(i0, i1, func(fn func(row, col int32, v float32)) {
		visit(true, func(t triple) { fn(t.item, t.user, t.rating) })
	})
	if u, i, ok := byUser.duplicate(); ok {
		dup = &triple{user: u, item: i}
	}
	return byUser, byItem, dup, nil
}

// buildRows builds the rows [first, stop) from the ratings visit passes to
// its argument (row, column, rating), which it calls twice: once to count
// the ratings of each row, once to place them. Each row's columns are then
// sorted unless they arrived in order.
func buildRows(first, stop int, visit func(fn func(row, col int32, v float32))) sparseRows {
	s := sparseRows{first: first, ptr: make([]int, stop-first+1)}
	visit(func(row, _ int32, _ float32) { s.ptr[int(row)-first+1]++ })
	for r := range stop - first {
		s.ptr[r+1] += s.ptr[r]
	}
	n := s.ptr[stop-first]
	s.col, s.val = make([]int32, n), make([]float32, n)
	next := slices.Clone(s.ptr[:stop-first])
	visit(func(row, col int32, v float32) {
		r := int(row) - first
		s.col[next[r]], s.val[next[r]] = col, v
		next[r]++
	})
	var tmp []uint64
	for r := range stop - first {
		cols, vals := s.row(r)
		if slices.IsSorted(cols) {
			continue
		}
		// Sort column and rating together as one key: column above,
		// the rating's bits below (columns are not negative).
		tmp = tmp[:0]
		for j, c := range cols {
			tmp = append(tmp, uint64(c)<<32|uint64(math.Float32bits(vals[j])))
		}
		slices.Sort(tmp)
		for j, k := range tmp {
			cols[j], vals[j] = int32(k>>32), math.Float32frombits(uint32(k))
		}
	}
	return s
}

// duplicate returns a row and column rated twice, if there is one (the
// first in row order).
func (s *sparseRows) duplicate() (row, col int32, ok bool) {
	for r := range s.rows() {
		cols, _ := s.row(r)
		for j := 1; j < len(cols); j++ {
			if cols[j] == cols[j-1] {
				return int32(s.first + r), cols[j], true
			}
		}
	}
	return 0, 0, false
}

// agreeDuplicate tells every locality of the first pair rated twice that
// any of them found (dup, a dense user and item, or nil): locality 0,
// which holds the ids, names it; the others say who does.
func agreeDuplicate(ctx context.Context, comm *runtime.Communicator, here, items int, dup *triple, userIDs, itemIDs []int64) error {
	key := math.Inf(1)
	if dup != nil {
		key = float64(dup.user)*float64(items) + float64(dup.item)
	}
	got, err := comm.AllReduce(ctx, []float64{key}, runtime.ReduceMin).Get(ctx)
	if err != nil {
		return err
	}
	if math.IsInf(got[0], 1) {
		return nil
	}
	if here != 0 {
		return afterPeer(ctx, comm, errors.New("a pair is rated twice (locality 0 names it)"))
	}
	u, i := int(got[0])/items, int(got[0])%items
	return fmt.Errorf("two ratings of movie %d by user %d", itemIDs[i], userIDs[u])
}
