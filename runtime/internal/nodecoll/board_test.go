package nodecoll

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// boardMem returns zeroed memory for a board, aligned as a region's is.
func boardMem(sites, room int) []byte {
	n := Size(sites, room)
	words := make([]uint64, n/8+8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n]
}

// wait sleeps until sleep says it is ready. A sleep may end early (a
// signal), but one that lasts its whole timeout missed its wake-up: every
// wait here ends with a publication or a consumption well within it.
func wait(sleep func(time.Duration) bool, what string) {
	const timeout = 3 * time.Second
	for {
		start := time.Now()
		if sleep(timeout) {
			return
		}
		if time.Since(start) >= timeout {
			panic("lost wake-up: slept the whole timeout waiting for " + what)
		}
	}
}

// Every site publishes, then reduces all slots in site order, and sleeps
// on the bell whenever a slot is not there yet: many generations, random
// pauses, so slots are reused while slow readers still hold them and
// wakes race with sleeps (a lost wake-up stalls for seconds and panics).
func TestBoardAllReduceManyGenerations(t *testing.T) {
	for _, sites := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(sites), func(t *testing.T) {
			gens := 3000
			if testing.Short() {
				gens = 500
			}
			b, err := New(boardMem(sites, 64), sites, 64)
			if err != nil {
				t.Fatal(err)
			}
			results := make([][]float64, sites)
			var wg sync.WaitGroup
			for me := range sites {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(me), 7))
					for g := uint64(1); g <= uint64(gens); g++ {
						if rng.IntN(8) == 0 {
							time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
						}
						mine := b.Slot(me, g)
						wait(mine.SleepClaim, fmt.Sprintf("site %d's slot of generation %d", me, g))
						in := []float64{float64(g), float64(me + 1), 0.1 * float64(me)}
						b.Publish(mine, g, Header{Op: 1, Count: 3}, in, sites-1)
						acc := make([]float64, 3)
						for s := range sites {
							src := in
							if s != me {
								sl := b.Slot(s, g)
								wait(func(d time.Duration) bool { return sl.SleepArrival(g, d) }, fmt.Sprintf("site %d in generation %d", s, g))
								if h := sl.Header(); h.Op != 1 || h.Count != 3 {
									panic(fmt.Sprintf("site %d's header in generation %d: %+v", s, g, h))
								}
								src = append([]float64(nil), sl.Data(3)...)
								b.Consume(sl)
							}
							if src[0] != float64(g) {
								panic(fmt.Sprintf("site %d read generation %v from site %d, want %d", me, src[0], s, g))
							}
							for i := range acc {
								acc[i] += src[i]
							}
						}
						if g == uint64(gens) {
							results[me] = acc
						}
					}
				}()
			}
			wg.Wait()
			want := []float64{float64(sites * gens), float64(sites * (sites + 1) / 2), 0}
			for s := range sites {
				want[2] += 0.1 * float64(s)
			}
			for me, r := range results {
				if r[0] != want[0] || r[1] != want[1] || r[2] != want[2] || r[2] != results[0][2] {
					t.Errorf("site %d: %v, want %v (same bits on every site)", me, r, want)
				}
			}
		})
	}
}

// A root publishes generations as fast as the slots allow while readers
// lag: it never overwrites a slot a reader has not consumed.
func TestBoardRootRunsAhead(t *testing.T) {
	const sites, gens = 4, 2000
	b, err := New(boardMem(sites, 8), sites, 8)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for me := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := uint64(1); g <= gens; g++ {
				sl := b.Slot(0, g)
				if me == 0 {
					wait(sl.SleepClaim, "the root's slot")
					b.Publish(sl, g, Header{Op: 2, Count: 1}, []float64{float64(g) * 3}, sites-1)
					continue
				}
				if g%100 == 0 {
					time.Sleep(time.Millisecond) // the root fills every slot meanwhile
				}
				wait(func(d time.Duration) bool { return sl.SleepArrival(g, d) }, "the root's data")
				if v := sl.Data(1)[0]; v != float64(g)*3 {
					panic(fmt.Sprintf("site %d, generation %d: %v, want %v", me, g, v, float64(g)*3))
				}
				b.Consume(sl)
			}
		}()
	}
	wg.Wait()
}

func TestNewRefusesShortMemory(t *testing.T) {
	if _, err := New(make([]byte, 100), 2, 64); err == nil {
		t.Fatal("a board over 100 bytes")
	}
}

// The combining protocol: every site publishes for no reader and
// arrives; the last to arrive reduces every slot in site order and
// publishes the result, which the others sleep for. Many generations with
// random pauses, so result slots are reused while slow sites still read
// them and wakes race with sleeps (a lost wake-up stalls for seconds and
// panics); every site gets the same bits, and exactly one combines each
// generation.
func TestBoardCombineManyGenerations(t *testing.T) {
	for _, sites := range []int{2, 3, 4, 7} {
		t.Run(fmt.Sprint(sites), func(t *testing.T) {
			gens := 3000
			if testing.Short() {
				gens = 500
			}
			b, err := New(boardMem(sites, 64), sites, 64)
			if err != nil {
				t.Fatal(err)
			}
			combiners := make([]atomic.Int32, gens+1)
			sums := make([][]float64, sites)
			var wg sync.WaitGroup
			for me := range sites {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(me), 11))
					var sum float64
					for g := uint64(1); g <= uint64(gens); g++ {
						if rng.IntN(8) == 0 {
							time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
						}
						mine := b.Slot(me, g)
						wait(mine.SleepClaim, fmt.Sprintf("site %d's slot of generation %d", me, g))
						in := []float64{float64(g), 0.1 * float64(me+1)}
						b.Publish(mine, g, Header{Op: 1, Count: 2}, in, 0)
						last, ok := b.Arrive(g)
						if !ok {
							panic(fmt.Sprintf("site %d: generation %d taken for failed", me, g))
						}
						res := b.Result(g)
						var out []float64
						if last {
							combiners[g].Add(1)
							acc := make([]float64, 2)
							for s := range sites {
								sl := b.Slot(s, g)
								if !sl.Holds(g) || sl.Header().Count != 2 {
									panic(fmt.Sprintf("site %d, last of generation %d: site %d's slot holds %d, %+v", me, g, s, sl.Gen(), sl.Header()))
								}
								d := sl.Data(2)
								acc[0] += d[0]
								acc[1] += d[1]
							}
							wait(res.SleepClaim, fmt.Sprintf("the result slot of generation %d", g))
							b.Publish(res, g, Header{Op: 1, Count: 2}, acc, sites-1)
							out = acc
						} else {
							wait(func(d time.Duration) bool { return res.SleepArrival(g, d) }, fmt.Sprintf("the result of generation %d", g))
							out = append([]float64(nil), res.Data(2)...)
							b.Consume(res)
						}
						if out[0] != float64(sites)*float64(g) {
							panic(fmt.Sprintf("site %d, generation %d: %v, want %d first", me, g, out, sites*int(g)))
						}
						sum += out[1]
					}
					sums[me] = []float64{sum}
				}()
			}
			wg.Wait()
			for g := 1; g <= gens; g++ {
				if n := combiners[g].Load(); n != 1 {
					t.Fatalf("generation %d: %d sites combined, want 1", g, n)
				}
			}
			for me := range sites {
				if sums[me][0] != sums[0][0] {
					t.Errorf("site %d: results add up to %v, site 0's to %v: not the same bits", me, sums[me][0], sums[0][0])
				}
			}
		})
	}
}

// Arrive counts a generation's sites, reports the last, starts counting
// afresh for the entry's next generation, and refuses a generation that
// the entry has moved past.
func TestBoardArrive(t *testing.T) {
	const sites = 3
	b, err := New(boardMem(sites, 8), sites, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []uint64{5, 5 + Entries, 5 + 3*Entries} {
		for i := range sites {
			last, ok := b.Arrive(g)
			if !ok || last != (i == sites-1) {
				t.Fatalf("generation %d, arrival %d: last %v, ok %v; want %v, true", g, i+1, last, ok, i == sites-1)
			}
		}
	}
	// A generation that failed before every site arrived: the entry's
	// next one counts from one.
	if last, ok := b.Arrive(6); last || !ok {
		t.Fatalf("generation 6, first arrival: last %v, ok %v", last, ok)
	}
	for i := range sites {
		if last, ok := b.Arrive(6 + Entries); !ok || last != (i == sites-1) {
			t.Fatalf("generation %d after 6 failed, arrival %d: last %v, ok %v", 6+Entries, i+1, last, ok)
		}
	}
	if last, ok := b.Arrive(6); last || ok {
		t.Fatalf("generation 6 after the entry moved on: last %v, ok %v; want false, false", last, ok)
	}
	if _, err := New(make([]byte, 64), MaxSites+1, 0); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("a board of %d sites, more than an arrival word counts", MaxSites+1)
	}
}
