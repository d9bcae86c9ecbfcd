package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/runtime"
)

// sparseRows is a block of consecutive rows of the ratings matrix in
// compressed sparse row form: row first+r holds the columns
// col[ptr[r]:ptr[r+1]] (ascending) with the ratings val[ptr[r]:ptr[r+1]].
// A locality keeps its users as the rows of one (the user-item matrix) and
// its items as the rows of another (the transposed, item-user matrix).
type sparseRows struct {
	first int
	ptr   []int
	col   []int32
	val   []float64
}

// rows returns the number of rows held.
func (s *sparseRows) rows() int { return len(s.ptr) - 1 }

// nnz returns the number of ratings held.
func (s *sparseRows) nnz() int { return len(s.col) }

// row returns the columns and ratings of local row r.
func (s *sparseRows) row(r int) ([]int32, []float64) {
	return s.col[s.ptr[r]:s.ptr[r+1]], s.val[s.ptr[r]:s.ptr[r+1]]
}

// triple is one rating with dense indices.
type triple struct {
	user, item int32
	rating     float64
}

// ratings is one locality's share of the ratings: the rows of its users
// and of its items, and the original ids of every user and item (index ->
// id), the same on every locality.
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

// distribute sends every triple to the locality that owns its user and to
// the one that owns its item (both may be this one), and builds this
// locality's rows from what arrives. One AllToAllV carries both. Two
// ratings of one pair are an error; ids maps indices to the ids it names.
func distribute(ctx context.Context, comm *runtime.Communicator, here, parts, users, items int, local []triple, ids func(user, item int32) (int64, int64)) (sparseRows, sparseRows, error) {
	// Block d holds first the triples for d's users, then those for d's
	// items, each as (user, item, rating), with the user count in front.
	toUser := make([][]float64, parts)
	toItem := make([][]float64, parts)
	for _, t := range local {
		u := owner(users, parts, int(t.user))
		toUser[u] = append(toUser[u], float64(t.user), float64(t.item), t.rating)
		i := owner(items, parts, int(t.item))
		toItem[i] = append(toItem[i], float64(t.user), float64(t.item), t.rating)
	}
	blocks := make([][]float64, parts)
	for d := range blocks {
		b := make([]float64, 0, 1+len(toUser[d])+len(toItem[d]))
		b = append(b, float64(len(toUser[d])/3))
		b = append(b, toUser[d]...)
		blocks[d] = append(b, toItem[d]...)
	}
	got, err := comm.AllToAllV(ctx, blocks).Get(ctx)
	if err != nil {
		return sparseRows{}, sparseRows{}, fmt.Errorf("distributing the ratings: %w", err)
	}
	var mine, theirs []triple // by user, by item
	for _, b := range got {
		if len(b) == 0 {
			return sparseRows{}, sparseRows{}, errors.New("distributing the ratings: an empty block")
		}
		nu := int(b[0])
		b = b[1:]
		for j := 0; j+2 < len(b); j += 3 {
			t := triple{user: int32(b[j]), item: int32(b[j+1]), rating: b[j+2]}
			if j/3 < nu {
				mine = append(mine, t)
			} else {
				theirs = append(theirs, t)
			}
		}
	}
	u0, u1 := span(users, parts, here)
	i0, i1 := span(items, parts, here)
	byUser, dup := compress(mine, u0, u1, func(t triple) (int32, int32) { return t.user, t.item })
	if dup != nil {
		u, i := ids(dup.user, dup.item)
		return sparseRows{}, sparseRows{}, fmt.Errorf("two ratings of movie %d by user %d", i, u)
	}
	byItem, _ := compress(theirs, i0, i1, func(t triple) (int32, int32) { return t.item, t.user })
	return byUser, byItem, nil
}

// compress builds the rows [first, stop) from triples, keyed by key (row,
// column). It returns a rating whose pair is rated twice, if one is.
func compress(ts []triple, first, stop int, key func(triple) (int32, int32)) (sparseRows, *triple) {
	slices.SortFunc(ts, func(a, b triple) int {
		ra, ca := key(a)
		rb, cb := key(b)
		if ra != rb {
			return int(ra - rb)
		}
		return int(ca - cb)
	})
	s := sparseRows{first: first, ptr: make([]int, stop-first+1), col: make([]int32, len(ts)), val: make([]float64, len(ts))}
	for j, t := range ts {
		r, c := key(t)
		if j > 0 {
			if pr, pc := key(ts[j-1]); pr == r && pc == c {
				return sparseRows{}, &t
			}
		}
		s.ptr[int(r)-first+1]++
		s.col[j] = c
		s.val[j] = t.rating
	}
	for r := range stop - first {
		s.ptr[r+1] += s.ptr[r]
	}
	return s, nil
}

// ----- MovieLens input -----

// rawRating is one line of a ratings file, with its original ids.
type rawRating struct {
	user, item int64
	rating     float64
}

// share is what one locality parsed of its byte range of a ratings file.
type share struct {
	ratings []rawRating
	lines   int   // lines that start in the range (header included)
	badLine int   // local line number (1-based) of the first bad line; 0: none
	bad     error // what was wrong with it
}

// readShare parses the lines of the ratings file that start in the byte
// range [k*size/parts, (k+1)*size/parts): userId,movieId,rating[,timestamp].
// A first line of the file whose first field is not a number is a header.
// It counts the bytes it reads in ph.
func readShare(path string, k, parts int, ph *progress.Phase) (share, error) {
	f, err := os.Open(path)
	if err != nil {
		return share{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return share{}, err
	}
	size := st.Size()
	start, stop := size*int64(k)/int64(parts), size*int64(k+1)/int64(parts)
	// A line starts in the range if the byte before it is a newline (or
	// it is the file's first line) and its first byte is in the range.
	pos := start
	if start > 0 {
		pos = start - 1
	}
	if _, err := f.Seek(pos, io.SeekStart); err != nil {
		return share{}, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	if start > 0 {
		skipped, err := r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = r.ReadSlice('\n')
			skipped = append(skipped, more...)
		}
		pos += int64(len(skipped))
		if err == io.EOF {
			return share{}, nil
		}
		if err != nil {
			return share{}, err
		}
	}
	var sh share
	counted := pos // bytes up to here are in ph
	defer func() { ph.Add(pos - counted) }()
	for pos < stop {
		if pos-counted >= 1<<20 {
			ph.Add(pos - counted)
			counted = pos
		}
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return share{}, err
		}
		pos += int64(len(line))
		sh.lines++
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rr, perr := parseRating(line)
		if perr != nil {
			if k == 0 && sh.lines == 1 && !startsWithNumber(line) {
				continue // the header
			}
			if sh.bad == nil {
				sh.badLine, sh.bad = sh.lines, perr
			}
			continue
		}
		sh.ratings = append(sh.ratings, rr)
		if err == io.EOF {
			break
		}
	}
	return sh, nil
}

func startsWithNumber(line []byte) bool {
	field, _, _ := bytes.Cut(line, []byte(","))
	_, err := strconv.ParseFloat(string(bytes.TrimSpace(field)), 64)
	return err == nil
}

// parseRating parses "userId,movieId,rating[,timestamp]".
func parseRating(line []byte) (rawRating, error) {
	var fields [4][]byte
	n := 0
	for rest := line; ; n++ {
		if n == 4 {
			return rawRating{}, fmt.Errorf("more than 4 fields (userId,movieId,rating,timestamp)")
		}
		f, tail, found := bytes.Cut(rest, []byte(","))
		fields[n] = bytes.TrimSpace(f)
		if !found {
			n++
			break
		}
		rest = tail
	}
	if n < 3 {
		return rawRating{}, fmt.Errorf("%d fields, want userId,movieId,rating[,timestamp]", n)
	}
	u, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return rawRating{}, fmt.Errorf("column 1 (userId): %q is not an integer", fields[0])
	}
	i, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return rawRating{}, fmt.Errorf("column 2 (movieId): %q is not an integer", fields[1])
	}
	v, err := strconv.ParseFloat(string(fields[2]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return rawRating{}, fmt.Errorf("column 3 (rating): %q is not a positive number", fields[2])
	}
	return rawRating{user: u, item: i, rating: v}, nil
}

// readRatings reads a MovieLens ratings file on every locality, each
// parsing its own byte range; the ids are mapped to dense indices in
// ascending id order (the same map on every locality) and the ratings
// distributed to the owners of their users and items.
// Progress is shown on pc, for this locality's share.
func readRatings(ctx context.Context, comm *runtime.Communicator, here, parts int, path string, pc progress.Config) (*ratings, error) {
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	ph := progress.Start(pc, fmt.Sprintf("reading %s (locality %d's share)", filepath.Base(path), here),
		size*int64(here+1)/int64(parts)-size*int64(here)/int64(parts), progress.Bytes)
	sh, err := readShare(path, here, parts, ph)
	ph.Finish()
	if err != nil {
		return nil, fmt.Errorf("reading ratings %s: %w", path, err)
	}
	// Line numbers: this range starts after the lines of the ranges before.
	before, err := comm.ExclusiveScan(ctx, []float64{float64(sh.lines)}, 0, runtime.ReduceSum).Get(ctx)
	if err != nil {
		return nil, err
	}
	if sh.bad != nil {
		return nil, fmt.Errorf("ratings %s line %d: %w", path, int(before[0])+sh.badLine, sh.bad)
	}
	// The ids of every locality's share, to number them alike everywhere.
	uid, iid := distinct(sh.ratings)
	ids := make([]float64, 0, 1+len(uid)+len(iid))
	ids = append(ids, float64(len(uid)))
	for _, v := range uid {
		ids = append(ids, float64(v))
	}
	for _, v := range iid {
		ids = append(ids, float64(v))
	}
	all := make([][]float64, parts)
	for d := range all {
		all[d] = ids
	}
	got, err := comm.AllToAllV(ctx, all).Get(ctx)
	if err != nil {
		return nil, err
	}
	var users, items []int64
	for _, b := range got {
		nu := int(b[0])
		for j, v := range b[1:] {
			if j < nu {
				users = append(users, int64(v))
			} else {
				items = append(items, int64(v))
			}
		}
	}
	slices.Sort(users)
	users = slices.Compact(users)
	slices.Sort(items)
	items = slices.Compact(items)
	if len(users) == 0 || len(items) == 0 {
		return nil, fmt.Errorf("ratings %s holds no ratings", path)
	}
	if len(users) < parts || len(items) < parts {
		return nil, fmt.Errorf("ratings %s: %d users and %d items cannot be split over %d localities", path, len(users), len(items), parts)
	}
	userIndex := indexOf(users)
	itemIndex := indexOf(items)
	local := make([]triple, len(sh.ratings))
	for j, r := range sh.ratings {
		local[j] = triple{user: userIndex[r.user], item: itemIndex[r.item], rating: r.rating}
	}
	byUser, byItem, err := distribute(ctx, comm, here, parts, len(users), len(items), local,
		func(u, i int32) (int64, int64) { return users[u], items[i] })
	if err != nil {
		return nil, fmt.Errorf("ratings %s: %w", path, err)
	}
	return &ratings{users: len(users), items: len(items), byUser: byUser, byItem: byItem, userIDs: users, itemIDs: items}, nil
}

// distinct returns the sorted distinct user and item ids of rs.
func distinct(rs []rawRating) (users, items []int64) {
	users = make([]int64, len(rs))
	items = make([]int64, len(rs))
	for j, r := range rs {
		users[j], items[j] = r.user, r.item
	}
	slices.Sort(users)
	slices.Sort(items)
	return slices.Compact(users), slices.Compact(items)
}

func indexOf(ids []int64) map[int64]int32 {
	m := make(map[int64]int32, len(ids))
	for j, id := range ids {
		m[id] = int32(j)
	}
	return m
}
