package main

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/tessera-amt/tessera/runtime"
)

// idMap is the outcome of mapIDs.
type idMap struct {
	users, items     int
	userIDs, itemIDs []int64 // index -> id, on locality 0 only
}

// mapIDs replaces the raw user and item ids of ts by dense indices 0..n-1
// numbered in ascending id order, the same on every job size, without
// bringing all ids to one place:
//
//  1. each locality lists its distinct ids (a bitmap over their range, or
//     a sort when the range is sparse), and one AllReduce gives every
//     locality the smallest and largest id;
//  2. the id range is cut into equal parts, part d owned by locality d,
//     and one AllToAllV sends each owner the distinct ids in its part;
//  3. each owner merges what it got; an AllGather of the owners' counts
//     gives every owner its first index (the counts of the owners before
//     it, whose ids are all smaller), and a second AllToAllV returns to
//     each locality the index of every id it sent, in the order sent;
//  4. each locality rewrites its triples through a table of its ids.
//
// A last AllToAllV gives locality 0 the ids in index order, for the
// factor files. The messages carry distinct ids only (at most a few
// hundred thousand for MovieLens), never the ratings.
func mapIDs(ctx context.Context, comm *runtime.Communicator, here, parts int, chunks [][]triple) (idMap, error) {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	users := newIDSet(n, func(yield func(int32)) {
		for _, c := range chunks {
			for _, t := range c {
				yield(t.user)
			}
		}
	})
	items := newIDSet(n, func(yield func(int32)) {
		for _, c := range chunks {
			for _, t := range c {
				yield(t.item)
			}
		}
	})
	ext, err := comm.AllReduce(ctx, []float64{users.lowest(), items.lowest(), -users.highest(), -items.highest()}, runtime.ReduceMin).Get(ctx)
	if err != nil {
		return idMap{}, err
	}
	uRange := idRange{lo: int64(ext[0]), hi: int64(-ext[2]), parts: parts}
	iRange := idRange{lo: int64(ext[1]), hi: int64(-ext[3]), parts: parts}
	// 2. The distinct ids to their owners: [number of users, users, items].
	ask := make([][]float64, parts)
	for d := range parts {
		us, is := uRange.of(users.sorted, d), iRange.of(items.sorted, d)
		b := make([]float64, 0, 1+len(us)+len(is))
		b = append(b, float64(len(us)))
		for _, id := range us {
			b = append(b, float64(id))
		}
		for _, id := range is {
			b = append(b, float64(id))
		}
		ask[d] = b
	}
	asked, err := comm.AllToAllV(ctx, ask).Get(ctx)
	if err != nil {
		return idMap{}, err
	}
	// 3. The owner's ids, its first indices, and the answers.
	var ownU, ownI []int32
	for _, b := range asked {
		nu := int(b[0])
		for j, v := range b[1:] {
			if j < nu {
				ownU = append(ownU, int32(v))
			} else {
				ownI = append(ownI, int32(v))
			}
		}
	}
	slices.Sort(ownU)
	ownU = slices.Compact(ownU)
	slices.Sort(ownI)
	ownI = slices.Compact(ownI)
	counts, err := comm.AllGather(ctx, []float64{float64(len(ownU)), float64(len(ownI))}).Get(ctx)
	if err != nil {
		return idMap{}, err
	}
	var out idMap
	baseU, baseI := 0, 0
	for d := range parts {
		if d < here {
			baseU += int(counts[2*d])
			baseI += int(counts[2*d+1])
		}
		out.users += int(counts[2*d])
		out.items += int(counts[2*d+1])
	}
	answer := make([][]float64, parts)
	for d, b := range asked {
		nu := int(b[0])
		a := make([]float64, len(b)-1)
		for j, v := range b[1:] {
			if j < nu {
				k, _ := slices.BinarySearch(ownU, int32(v))
				a[j] = float64(baseU + k)
			} else {
				k, _ := slices.BinarySearch(ownI, int32(v))
				a[j] = float64(baseI + k)
			}
		}
		answer[d] = a
	}
	answered, err := comm.AllToAllV(ctx, answer).Get(ctx)
	if err != nil {
		return idMap{}, err
	}
	// 4. The owners' answers, in owner order, follow the sorted ids.
	denseU := make([]int32, 0, len(users.sorted))
	denseI := make([]int32, 0, len(items.sorted))
	for d, a := range answered {
		nu := len(uRange.of(users.sorted, d))
		for j, v := range a {
			if j < nu {
				denseU = append(denseU, int32(v))
			} else {
				denseI = append(denseI, int32(v))
			}
		}
	}
	if len(denseU) != len(users.sorted) || len(denseI) != len(items.sorted) {
		return idMap{}, fmt.Errorf("mapping the ids: %d and %d indices for %d users and %d items", len(denseU), len(denseI), len(users.sorted), len(items.sorted))
	}
	users.setIndices(denseU)
	items.setIndices(denseI)
	for _, c := range chunks {
		for j := range c {
			c[j].user = users.index(c[j].user)
			c[j].item = items.index(c[j].item)
		}
	}
	// The ids in index order, for locality 0.
	toRoot := make([][]float64, parts)
	for d := range toRoot {
		toRoot[d] = []float64{}
	}
	own := make([]float64, 0, 1+len(ownU)+len(ownI))
	own = append(own, float64(len(ownU)))
	for _, id := range ownU {
		own = append(own, float64(id))
	}
	for _, id := range ownI {
		own = append(own, float64(id))
	}
	toRoot[0] = own
	all, err := comm.AllToAllV(ctx, toRoot).Get(ctx)
	if err != nil {
		return idMap{}, err
	}
	if here == 0 {
		out.userIDs = make([]int64, 0, out.users)
		out.itemIDs = make([]int64, 0, out.items)
		for _, b := range all {
			nu := int(b[0])
			for j, v := range b[1:] {
				if j < nu {
					out.userIDs = append(out.userIDs, int64(v))
				} else {
					out.itemIDs = append(out.itemIDs, int64(v))
				}
			}
		}
	}
	return out, nil
}

// idRange cuts the ids [lo, hi] into parts equal parts.
type idRange struct {
	lo, hi int64
	parts  int
}

// ownerOf returns the part of id.
func (r idRange) ownerOf(id int32) int {
	return int((int64(id) - r.lo) * int64(r.parts) / (r.hi - r.lo + 1))
}

// of returns the run of the sorted ids that falls in part d.
func (r idRange) of(sorted []int32, d int) []int32 {
	lo, _ := slices.BinarySearchFunc(sorted, d, func(id int32, d int) int { return r.ownerOf(id) - d })
	hi, _ := slices.BinarySearchFunc(sorted, d+1, func(id int32, d int) int { return r.ownerOf(id) - d })
	return sorted[lo:hi]
}

// idSet is the distinct ids one locality holds, sorted, and once known
// their dense indices. Lookups go through a table over [min, max] when the
// range is small next to the number of ids, else by binary search.
type idSet struct {
	sorted []int32
	dense  []int32 // index of sorted[j]
	min    int32
	table  []int32 // id-min -> index, or nil
}

// tableLimit bounds the range of ids a table covers: within it a set is
// found with a bitmap and looked up in a table.
func tableLimit(n int) int64 { return max(int64(n)*4, 1<<20) }

func newIDSet(n int, each func(yield func(int32))) *idSet {
	s := &idSet{}
	lo, hi := int32(math.MaxInt32), int32(-1)
	each(func(id int32) { lo, hi = min(lo, id), max(hi, id) })
	if hi < 0 {
		return s
	}
	s.min = lo
	if span := int64(hi) - int64(lo) + 1; span <= tableLimit(n) {
		seen := make([]uint64, (span+63)/64)
		each(func(id int32) { k := id - lo; seen[k/64] |= 1 << (k % 64) })
		for w, word := range seen {
			for ; word != 0; word &= word - 1 {
				s.sorted = append(s.sorted, lo+int32(w*64+bits.TrailingZeros64(word)))
			}
		}
		s.table = make([]int32, span)
		return s
	}
	all := make([]int32, 0, n)
	each(func(id int32) { all = append(all, id) })
	slices.Sort(all)
	s.sorted = slices.Clip(slices.Compact(all))
	return s
}

func (s *idSet) lowest() float64 {
	if len(s.sorted) == 0 {
		return math.Inf(1)
	}
	return float64(s.sorted[0])
}

func (s *idSet) highest() float64 {
	if len(s.sorted) == 0 {
		return math.Inf(-1)
	}
	return float64(s.sorted[len(s.sorted)-1])
}

func (s *idSet) setIndices(dense []int32) {
	s.dense = dense
	if s.table != nil {
		for j, id := range s.sorted {
			s.table[id-s.min] = dense[j]
		}
	}
}

func (s *idSet) index(id int32) int32 {
	if s.table != nil {
		return s.table[id-s.min]
	}
	j, _ := slices.BinarySearch(s.sorted, id)
	return s.dense[j]
}
