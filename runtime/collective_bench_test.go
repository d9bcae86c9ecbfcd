package runtime

import (
	"context"
	"fmt"
	"testing"
)

// benchColl runs op b.N times on every locality of a job of n, inproc, and
// reports the time per operation and, for payloads, the bytes of one site's
// input per second.
func benchColl(b *testing.B, n, elems, ringFrom int, op func(ctx context.Context, c *Communicator, d []float64) error) {
	ctx := context.Background()
	job, err := StartLocal(ctx, n, Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(elems * 8))
	b.ResetTimer()
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "bench", nil, 0)
		if err != nil {
			return err
		}
		c.ringFrom, c.bcastRingFrom = ringFrom, ringFrom
		d := make([]float64, elems)
		for range b.N {
			if err := op(ctx, c, d); err != nil {
				return err
			}
		}
		return nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAllReduce measures AllReduce on 4 localities with each
// algorithm, to find the crossover.
func BenchmarkAllReduce(b *testing.B) {
	allReduce := func(ctx context.Context, c *Communicator, d []float64) error {
		return c.AllReduce(ctx, d, ReduceSum).Err(ctx)
	}
	for _, elems := range []int{1, 128, 1024, 2048, 4096, 8192, 32768, 131072} {
		for _, alg := range []struct {
			name     string
			ringFrom int
		}{{"doubling", 1 << 62}, {"ring", 0}} {
			b.Run(fmt.Sprintf("%dB/%s", elems*8, alg.name), func(b *testing.B) {
				benchColl(b, 4, elems, alg.ringFrom, allReduce)
			})
		}
	}
}

// BenchmarkAllGather measures AllGather of 1 MiB per locality on 4.
func BenchmarkAllGather(b *testing.B) {
	for _, alg := range []struct {
		name     string
		ringFrom int
	}{{"bruck", 1 << 62}, {"ring", 0}} {
		b.Run("1MiB/"+alg.name, func(b *testing.B) {
			benchColl(b, 4, 1<<20/8, alg.ringFrom, func(ctx context.Context, c *Communicator, d []float64) error {
				return c.AllGather(ctx, d).Err(ctx)
			})
		})
	}
}

// BenchmarkBroadcast measures Broadcast of 1 MiB on 4 localities with
// each algorithm.
func BenchmarkBroadcast(b *testing.B) {
	for _, alg := range []struct {
		name     string
		ringFrom int
	}{{"tree", 1 << 62}, {"scatter+ring", 0}} {
		b.Run("1MiB/"+alg.name, func(b *testing.B) {
			benchColl(b, 4, 1<<20/8, alg.ringFrom, func(ctx context.Context, c *Communicator, d []float64) error {
				return c.Broadcast(ctx, d).Err(ctx)
			})
		})
	}
}

// BenchmarkAllReduceTCP measures AllReduce of one float64 and of 1 MiB on
// 4 localities in this process over TCP on the loopback.
func BenchmarkAllReduceTCP(b *testing.B) {
	for _, elems := range []int{1, 1 << 20 / 8} {
		b.Run(fmt.Sprintf("%dB", elems*8), func(b *testing.B) {
			ctx := context.Background()
			rts := startTCPWith(b, 4, Config{Lanes: 2})
			b.SetBytes(int64(elems * 8))
			b.ResetTimer()
			err := spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
				c, err := NewCommunicator(rt, "bench", nil, 0)
				if err != nil {
					return err
				}
				d := make([]float64, elems)
				for range b.N {
					if err := c.AllReduce(ctx, d, ReduceSum).Err(ctx); err != nil {
						return err
					}
				}
				return nil
			})
			b.StopTimer()
			if err != nil {
				for _, rt := range rts {
					rt.Abort(err)
				}
				b.Fatal(err)
			}
			finalizeAll(b, rts)
		})
	}
}

// The operations over the TCP parcelport: n localities in this process,
// each with its own listener on the loopback.
func TestCollectivesOverTCP(t *testing.T) {
	const n = 3
	ctx := testCtx(t)
	rts := startTCPWith(t, n, Config{Lanes: 2})
	sizes := []int{5, 10007, 4 << 20 / 8}
	if raceDetector || testing.Short() {
		sizes = sizes[:2]
	}
	const root = 1
	for _, m := range sizes {
		cases := collCases(n, m, root)
		err := spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
			c, err := NewCommunicator(rt, fmt.Sprint("test.tcp", m), nil, root)
			if err != nil {
				return err
			}
			defer c.Close()
			for _, cs := range cases {
				got, err := cs.run(ctx, c).Get(ctx)
				if err != nil {
					return fmt.Errorf("%d elements, %s: %w", m, cs.name, err)
				}
				if err := sameFloats(got, cs.want(c.Site())); err != nil {
					return fmt.Errorf("%d elements, %s on site %d: %w", m, cs.name, c.Site(), err)
				}
			}
			return nil
		})
		if err != nil {
			for _, rt := range rts {
				rt.Abort(err)
			}
			t.Fatal(err)
		}
	}
	finalizeAll(t, rts)
}
