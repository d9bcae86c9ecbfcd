package runtime

import (
	"fmt"
	"math"
	"sync"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/runtime/internal/nodebulk"
)

// Large collectives through the machine's shared memory. An AllReduce
// above nodeMaxBytes or an AllGather of at least nodeLargeMinBytes per
// site, when the communicator has a board (collective_node.go), runs
// through a second region of the communicator (runtime/internal/nodebulk)
// instead of point-to-point messages: each site copies its data in once,
// and the sites reduce a part each, or copy the others' data straight
// out, chunk by chunk.
//
// Site 0 makes the region on the first such operation and picks for each
// operation an entry of it that every site is done with (or, when none is
// free, the point-to-point algorithms). It publishes its choice and the
// region's name (process, descriptor, inode, size) in its board slot of
// the generation; every other site reads it, maps the region the first
// time, and publishes whether it could. Every site reads every slot,
// which also compares the calls (a MismatchError as on the board), and
// the operation goes through the entry only when every site mapped the
// region; otherwise site 0 gives the region up for the communicator and
// this and later operations go point to point. Waits are the board's
// (nodeWait): a dead site or a failed generation ends them with an error,
// and an entry a failed generation left is taken again.

const (
	// nodeLargeMinBytes is the smallest AllGather contribution per site
	// that goes through the region (an AllReduce goes there from
	// nodeMaxBytes on). Measured with 4 localities on 2 cores, the
	// region's AllGather of 8 bytes to 4 KiB per site took 45-50 us,
	// the parcels' 190 us; from 8 KiB to 2 MiB the region took a third
	// to a seventh of the parcels' time (AllReduce: a third to a half).
	nodeLargeMinBytes = 8
	// nodeRegionBytes is about the bytes of a chunk over all sites: a
	// site's chunk is this over the sites, within nodeChunkMin and
	// nodeChunkMax. Chunks of 64 to 512 KiB on 4 sites took 1.2-1.9x the
	// time of 1 MiB ones: every chunk adds waits, and a wait on 2 cores
	// shared by 4 localities is a sleep.
	nodeRegionBytes = 4 << 20
	nodeChunkMin    = 64 << 10
	nodeChunkMax    = 1 << 20
	// nodeLargeOff, in site 0's slot: the operation goes point to point;
	// else the slot's flag is the entry plus one, with
	// nodeLargeEstablished when every site mapped the region before.
	nodeLargeOff         = 0
	nodeLargeEstablished = 1 << 8
	// nodeLargeMapped, in another site's slot: it mapped the region.
	nodeLargeMapped = 1
)

// nodeChunk is the bytes of a chunk of one of sites sites: the region of
// a communicator of p sites has about 4(p+1) chunks.
func nodeChunk(sites int) int {
	c := nodeRegionBytes / sites
	return min(nodeChunkMax, max(nodeChunkMin, c&^(nodeChunkMin-1)))
}

// nodeLarge is a communicator's large region on this locality.
type nodeLarge struct {
	mu        sync.Mutex
	off       bool // site 0: a site could not map the region; point to point
	confirmed bool // site 0: every site mapped the region
	region    *shm.Region
	bulk      *nodebulk.Region
	next      int // site 0: the entry to try first
}

// close unmaps the region; the caller holds the board's nodeState.mu and
// no operation is pending.
func (l *nodeLarge) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.region != nil {
		l.region.Close()
		l.region, l.bulk = nil, nil
	}
}

// name is the region's name as site 0's slot carries it.
func (l *nodeLarge) name() []float64 {
	bits := math.Float64frombits
	reg := l.region
	return []float64{bits(uint64(reg.PID)), bits(uint64(reg.FD)), bits(reg.Ino), bits(uint64(len(reg.Mem)))}
}

// make creates the region on site 0, unless it exists or was given up.
func (l *nodeLarge) make(sites int) (*nodebulk.Region, error) {
	if l.off {
		return nil, nil
	}
	if l.bulk != nil {
		return l.bulk, nil
	}
	reg, err := shm.NewRegion(nodebulk.Size(sites, nodeChunk(sites)))
	if err != nil {
		return nil, err
	}
	return l.adopt(reg, sites)
}

// adopt lays the protocol over reg, which this site created or mapped,
// and keeps both; reg is closed if it does not fit.
func (l *nodeLarge) adopt(reg *shm.Region, sites int) (*nodebulk.Region, error) {
	b, err := nodebulk.New(reg.Mem, sites, nodeChunk(sites))
	if err != nil {
		reg.Close()
		return nil, err
	}
	l.region, l.bulk = reg, b
	return b, nil
}

// mapName maps the region site 0 named, unless it is mapped already.
func (l *nodeLarge) mapName(sites int, v []float64) (*nodebulk.Region, error) {
	if len(v) != 4 {
		return nil, fmt.Errorf("site 0's slot names the region in %d values, want 4", len(v))
	}
	u := func(i int) uint64 { return math.Float64bits(v[i]) }
	size := int64(nodebulk.Size(sites, nodeChunk(sites)))
	if reg := l.region; reg != nil && uint64(reg.PID) == u(0) && uint64(reg.FD) == u(1) && reg.Ino == u(2) {
		return l.bulk, nil
	}
	if reg := l.region; reg != nil {
		// Site 0 makes one region per communicator and keeps it.
		return nil, fmt.Errorf("site 0 names region fd %d of process %d, not %v, which it named before", u(1), u(0), reg)
	}
	if int64(u(3)) != size {
		return nil, fmt.Errorf("site 0's region has %d bytes, want %d", u(3), size)
	}
	reg, err := shm.MapRegion(int32(u(0)), int32(u(1)), u(2), size)
	if err != nil {
		return nil, err
	}
	return l.adopt(reg, sites)
}

// nodeEntry agrees with the other sites on the entry of the region that
// this run uses (see the top of the file). It returns a nil entry with a
// nil error when the run is to go point to point. When site 0 says the
// region is established (every site mapped it in an earlier operation),
// the others' slots are read by arrived, which the caller calls once it
// copied its first chunk in, so that the copy overlaps the sites'
// arrival; otherwise nodeEntry reads them and arrived is nil.
func (r *opRun) nodeEntry() (e *nodebulk.Entry, arrived func() error, err error) {
	b, err := r.nodeBoard()
	if b == nil {
		return nil, nil, err
	}
	c, l, n := r.c, &r.c.node.large, b.Sites()
	h := r.header()
	var entry *nodebulk.Entry
	var data []float64
	published, established := false, false
	if c.here == 0 {
		l.mu.Lock()
		bulk, err := l.make(n)
		if err != nil {
			l.off = true
			c.rt.log.Warn("runtime: no shared memory for large collectives", "communicator", c.name, "locality", c.rt.here, "err", err)
		}
		if bulk != nil {
			for i := range nodebulk.Entries {
				k := (l.next + i) % nodebulk.Entries
				if e := bulk.Entry(k); e.Claim(r.gen) || e.Reclaim(r.gen, r.genFailed) {
					entry, l.next, h.Flag = e, k+1, uint32(k+1)
					break
				}
			}
			if entry != nil && l.confirmed {
				h.Flag |= nodeLargeEstablished
				established = true
			}
			data = l.name()
		}
		l.mu.Unlock()
	} else {
		l.mu.Lock()
		mapped := l.bulk != nil
		l.mu.Unlock()
		if mapped { // say so now: site 0 need not wait for it
			h.Flag = nodeLargeMapped
			if err := r.publish(b, h, nil); err != nil {
				return nil, nil, err
			}
			published = true
		}
		sl, err := r.arrived(b, 0)
		if err != nil {
			return nil, nil, err
		}
		f := sl.Header().Flag
		if k := f &^ nodeLargeEstablished; k != nodeLargeOff && k <= nodebulk.Entries {
			l.mu.Lock()
			bulk, err := l.mapName(n, sl.Data(min(4, b.Room()/8)))
			l.mu.Unlock()
			if err != nil {
				c.rt.log.Warn("runtime: no shared memory for large collectives", "communicator", c.name, "locality", c.rt.here, "err", err)
			} else {
				entry, h.Flag = bulk.Entry(int(k-1)), nodeLargeMapped
				established = f&nodeLargeEstablished != 0
			}
		}
		b.Consume(sl)
	}
	if !published {
		if err := r.publish(b, h, data); err != nil {
			return nil, nil, r.dropEntry(entry, err)
		}
	}
	read := func() (all bool, err error) {
		all = entry != nil
		for s := 1; s < n; s++ {
			if s == c.here {
				continue
			}
			sl, err := r.arrived(b, s)
			if err != nil {
				return false, err
			}
			all = all && sl.Header().Flag != nodeLargeOff
			b.Consume(sl)
		}
		return all, nil
	}
	if established {
		return entry, func() error {
			if all, err := read(); err != nil || all {
				return err
			}
			return fmt.Errorf("a site has not mapped the region of communicator %q that every site mapped before", c.name)
		}, nil
	}
	all, err := read()
	if err != nil {
		return nil, nil, r.dropEntry(entry, err)
	}
	if c.here == 0 && entry != nil {
		// Every site mapped the region, or one could not: then it is of
		// no use to this communicator.
		l.mu.Lock()
		l.confirmed, l.off = all, !all
		l.mu.Unlock()
	}
	if !all {
		return nil, nil, r.dropEntry(entry, nil)
	}
	return entry, nil, nil
}

// dropEntry gives back an entry the run will not use (site 0 claimed it
// for every site; the others took nothing) and returns err.
func (r *opRun) dropEntry(e *nodebulk.Entry, err error) error {
	if e != nil && r.c.here == 0 {
		for range r.c.sites {
			e.Done()
		}
	}
	return err
}

// nodeLargeAllReduce is AllReduce through the region; ok false: the run
// goes point to point.
func (r *opRun) nodeLargeAllReduce(data []float64, op func(a, b float64) float64) (v []float64, ok bool, err error) {
	if 8*len(data) <= nodeMaxBytes {
		return nil, false, nil
	}
	e, arrived, err := r.nodeEntry()
	if e == nil {
		return nil, err != nil, err
	}
	out := r.Uncleared(len(data))
	if err := e.AllReduce(r.c.here, r.gen, data, out, nodebulk.Combine(combiner(op)), r.nodeWait, arrived); err != nil {
		r.Recycle(out)
		return nil, true, err
	}
	e.Done()
	return out, true, nil
}

// nodeLargeAllGather is AllGather through the region; ok false: the run
// goes point to point.
func (r *opRun) nodeLargeAllGather(data []float64) (v []float64, ok bool, err error) {
	if 8*len(data) < nodeLargeMinBytes {
		return nil, false, nil
	}
	e, arrived, err := r.nodeEntry()
	if e == nil {
		return nil, err != nil, err
	}
	out := r.Uncleared(len(r.c.sites) * len(data))
	if err := e.AllGather(r.c.here, r.gen, data, out, r.nodeWait, arrived); err != nil {
		r.Recycle(out)
		return nil, true, err
	}
	e.Done()
	return out, true, nil
}
