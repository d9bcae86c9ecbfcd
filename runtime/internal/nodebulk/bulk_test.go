package nodebulk

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// regionMem returns zeroed memory for a region, aligned as a mapping is.
func regionMem(n int) []byte {
	words := make([]uint64, n/8+8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n]
}

// spinWait is a Wait that sleeps on the bell and panics on a lost wake-up:
// every wait here ends well within the timeout.
func spinWait(ready func() bool, sleep func(time.Duration) bool) error {
	const timeout = 3 * time.Second
	for !ready() {
		start := time.Now()
		if sleep(timeout) {
			return nil
		}
		if time.Since(start) >= timeout {
			panic("lost wake-up: slept the whole timeout")
		}
	}
	return nil
}

func sum(dst, lo, hi []float64) {
	for i := range dst {
		dst[i] = lo[i] + hi[i]
	}
}

// Sites run AllReduce and AllGather of random lengths (less than a chunk,
// several chunks, not a multiple) through alternating entries for many
// generations with random pauses, and every site gets the expected sums
// and concatenations.
func TestAllReduceAllGather(t *testing.T) {
	for _, sites := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint(sites), func(t *testing.T) {
			const chunk = 256 // bytes: 32 float64s
			gens := 400
			if testing.Short() {
				gens = 100
			}
			r, err := New(regionMem(Size(sites, chunk)), sites, chunk)
			if err != nil {
				t.Fatal(err)
			}
			lengths := make([]int, gens+1)
			rng := rand.New(rand.NewPCG(1, 2))
			for g := range lengths {
				lengths[g] = rng.IntN(5 * chunk / 8)
			}
			// The test plays the runtime's part: it hands out entries in
			// turn, as the first site to need one does.
			var wg sync.WaitGroup
			errs := make(chan error, sites)
			for me := range sites {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(me), 9))
					for g := uint64(1); g <= uint64(gens); g++ {
						if rng.IntN(6) == 0 {
							time.Sleep(time.Duration(rng.IntN(40)) * time.Microsecond)
						}
						e := r.Entry(int(g % Entries))
						if me == 0 {
							for !e.Claim(g) {
								time.Sleep(time.Microsecond)
							}
						} else {
							for e.owner.Load() != g {
								time.Sleep(time.Microsecond)
							}
						}
						m := lengths[g]
						data := make([]float64, m)
						for i := range data {
							data[i] = float64(int(g)*1000 + me*100 + i)
						}
						out := make([]float64, m)
						if g%2 == 0 {
							if err := e.AllReduce(me, g, data, out, sum, spinWait, nil); err != nil {
								errs <- err
								return
							}
							for i, v := range out {
								want := 0.0
								for s := range sites {
									want += float64(int(g)*1000 + s*100 + i)
								}
								if v != want {
									errs <- fmt.Errorf("site %d, generation %d, AllReduce of %d: element %d is %v, want %v", me, g, m, i, v, want)
									return
								}
							}
						} else {
							out = make([]float64, sites*m)
							if err := e.AllGather(me, g, data, out, spinWait, nil); err != nil {
								errs <- err
								return
							}
							for s := range sites {
								for i := range m {
									if v, want := out[s*m+i], float64(int(g)*1000+s*100+i); v != want {
										errs <- fmt.Errorf("site %d, generation %d, AllGather of %d: site %d's element %d is %v, want %v", me, g, m, s, i, v, want)
										return
									}
								}
							}
						}
						e.Done()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(regionMem(100), 2, 64); err == nil {
		t.Error("a region over 100 bytes")
	}
	if _, err := New(regionMem(Size(2, 100)), 2, 100); err == nil {
		t.Error("a chunk of 100 bytes")
	}
}

// A wait that gives up ends the operation with its error, and the entry
// the failed generation holds is taken again only once that generation
// counts as failed.
func TestWaitErrorAndReclaim(t *testing.T) {
	const sites, chunk = 3, 128
	r, err := New(regionMem(Size(sites, chunk)), sites, chunk)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Entry(1)
	if !e.Claim(5) || e.Claim(6) {
		t.Fatal("an entry claimed twice, or not at all")
	}
	gone := fmt.Errorf("site 2 is gone")
	giveUp := func(ready func() bool, sleep func(time.Duration) bool) error {
		if sleep(time.Millisecond) {
			return fmt.Errorf("site 2 never came, yet the wait was ready")
		}
		return gone
	}
	data := make([]float64, 40)
	if err := e.AllReduce(0, 5, data, make([]float64, 40), sum, giveUp, nil); err != gone {
		t.Fatalf("AllReduce without the other sites: %v, want %v", err, gone)
	}
	if err := e.AllGather(0, 5, data, make([]float64, 3*40), giveUp, func() error { return nil }); err != gone {
		t.Fatalf("AllGather without the other sites: %v, want %v", err, gone)
	}
	e.Done()
	failed := map[uint64]bool{}
	isFailed := func(g uint64) bool { return failed[g] }
	if e.Reclaim(6, isFailed) {
		t.Fatal("an entry taken from a generation that did not fail")
	}
	failed[5] = true
	if !e.Reclaim(6, isFailed) || e.owner.Load() != 6 {
		t.Fatal("the entry of a failed generation not taken again")
	}
	for range sites {
		e.Done()
	}
	if !e.Claim(7) {
		t.Fatal("an entry every site gave back not claimed")
	}
}
