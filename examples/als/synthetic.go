package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/runtime"
)

// synthetic describes a generated ratings matrix: users x items with about
// density*items ratings per user.
type synthetic struct {
	users, items int
	density      float64
	seed         uint64
}

// parseSynthetic parses "USERS,ITEMS,DENSITY".
func parseSynthetic(s string, seed uint64) (synthetic, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return synthetic{}, fmt.Errorf("--synthetic %q: want USERS,ITEMS,DENSITY", s)
	}
	u, err1 := strconv.Atoi(strings.TrimSpace(parts[0]))
	i, err2 := strconv.Atoi(strings.TrimSpace(parts[1]))
	d, err3 := strconv.ParseFloat(strings.TrimSpace(parts[2]), 64)
	switch {
	case err1 != nil || u < 1:
		return synthetic{}, fmt.Errorf("--synthetic %q: USERS must be a positive integer", s)
	case err2 != nil || i < 1:
		return synthetic{}, fmt.Errorf("--synthetic %q: ITEMS must be a positive integer", s)
	case err3 != nil || !(d > 0 && d <= 0.5):
		return synthetic{}, fmt.Errorf("--synthetic %q: DENSITY must be in (0, 0.5]", s)
	}
	return synthetic{users: u, items: i, density: d, seed: seed}, nil
}

// rng is splitmix64: a small generator seeded per user, so that a user's
// ratings depend on the seed and the user alone, never on the number of
// localities.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// popularity returns the cumulative distribution of item choices: the
// item of popularity rank k is chosen with weight 1/(k+10), Zipf's law,
// the long tail of real ratings: over 27,000 items (MovieLens-20M's
// count) the most popular 20% draw 80% of the choices. The ranks are a
// fixed shuffle of the items (the same for every seed): popular items are
// spread over the ids, as MovieLens's are, not gathered at the lowest ids,
// which would give the locality owning those nearly all of the items'
// work (over 90% of it on 2 localities).
func popularity(items int) []float64 {
	rank := make([]int, items)
	for i := range rank {
		rank[i] = i
	}
	r := rng{s: 0x5eed ^ uint64(items)}
	for i := items - 1; i > 0; i-- { // Fisher-Yates
		j := int(r.next() % uint64(i+1))
		rank[i], rank[j] = rank[j], rank[i]
	}
	cdf := make([]float64, items)
	sum := 0.0
	for i := range cdf {
		sum += 1 / float64(rank[i]+10)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}

// minPerUser is the fewest ratings a generated user has, as in MovieLens,
// where every user rated at least 20 movies; a sparser matrix than that
// lowers it to half the mean.
const minPerUser = 20

// userRatings returns user u's ratings: a number of items around
// density*items (at least minPerUser, or half the mean if less, then
// exponentially spread), chosen by popularity without repetition, each
// with a half-star rating from 0.5 to 5; sorted by item.
func (g synthetic) userRatings(u int, cdf []float64, items []int32, vals []float64) ([]int32, []float64) {
	r := rng{s: g.seed ^ (uint64(u)+1)*0xd1b54a32d192ed03}
	mean := g.density * float64(g.items)
	least := max(1, min(minPerUser, int(mean/2)))
	k := least + int(math.Round(-(mean-float64(least))*math.Log(1-r.float())))
	k = max(1, min(k, g.items/2+1, g.items))
	items, vals = items[:0], vals[:0]
	// Draw what is missing, then drop the repeats, until k are distinct.
	for len(items) < k {
		for range k - len(items) {
			items = append(items, int32(min(draw(cdf, r.float()), g.items-1)))
		}
		slices.Sort(items)
		items = slices.Compact(items)
	}
	// The cumulative distribution of the ratings 0.5, 1, ..., 5: the
	// shape of MovieLens-20M, where most ratings are 3, 3.5 or 4 and whole
	// stars are more common than half stars.
	halfStars := [10]float64{0.011, 0.044, 0.056, 0.128, 0.172, 0.387, 0.492, 0.769, 0.846, 1}
	for range items {
		x := r.float()
		level := 0
		for level < len(halfStars)-1 && x >= halfStars[level] {
			level++
		}
		vals = append(vals, float64(level+1)/2)
	}
	return items, vals
}

// draw returns the first index of cdf whose value is not below x.
func draw(cdf []float64, x float64) int {
	i, _ := slices.BinarySearch(cdf, x)
	return i
}

// generate makes this locality's share of the synthetic ratings: it
// generates its own users' rows and sends every rating to the owner of
// its item. Ids are index + 1.
// Progress is shown on pc, for this locality's users.
func (g synthetic) generate(ctx context.Context, comm *runtime.Communicator, here, parts int, pc progress.Config) (*ratings, error) {
	if g.users < parts || g.items < parts {
		return nil, fmt.Errorf("--synthetic %d users and %d items cannot be split over %d localities", g.users, g.items, parts)
	}
	cdf := popularity(g.items)
	u0, u1 := span(g.users, parts, here)
	ph := progress.Start(pc, fmt.Sprintf("generating ratings (locality %d's users)", here), int64(u1-u0), "users")
	var local []triple
	var items []int32
	var vals []float64
	for u := u0; u < u1; u++ {
		items, vals = g.userRatings(u, cdf, items, vals)
		for j, i := range items {
			local = append(local, triple{user: int32(u), item: i, rating: float32(vals[j])})
		}
		if (u-u0)%1024 == 1023 {
			ph.Add(1024)
		}
	}
	ph.Add(int64((u1 - u0) % 1024))
	ph.Finish()
	byUser, byItem, _, err := distribute(ctx, comm, here, parts, g.users, g.items, [][]triple{local})
	if err != nil {
		return nil, err
	}
	return &ratings{users: g.users, items: g.items, byUser: byUser, byItem: byItem,
		userIDs: sequence(g.users), itemIDs: sequence(g.items)}, nil
}

// sequence returns the ids 1..n.
func sequence(n int) []int64 {
	ids := make([]int64, n)
	for j := range ids {
		ids[j] = int64(j + 1)
	}
	return ids
}

// writeCSV writes the synthetic ratings as a MovieLens ratings file
// (userId,movieId,rating,timestamp) with movie ids spread out (3i+1) as
// in real files, where ids have gaps, showing progress on pc. It returns
// the number of ratings written.
func (g synthetic) writeCSV(path string, pc progress.Config) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	ph := progress.Start(pc, "writing "+path, int64(g.users), "users")
	defer ph.Finish()
	n := 0
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("userId,movieId,rating,timestamp\n")
	cdf := popularity(g.items)
	var items []int32
	var vals []float64
	var line []byte
	for u := range g.users {
		items, vals = g.userRatings(u, cdf, items, vals)
		for j, i := range items {
			line = strconv.AppendInt(line[:0], int64(u+1), 10)
			line = append(line, ',')
			line = strconv.AppendInt(line, int64(3*int(i)+1), 10)
			line = append(line, ',')
			line = strconv.AppendFloat(line, vals[j], 'f', 1, 64)
			line = append(line, ',')
			line = strconv.AppendInt(line, int64(1500000000+u*100+j), 10)
			line = append(line, '\n')
			w.Write(line)
		}
		n += len(items)
		ph.Add(1)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}
