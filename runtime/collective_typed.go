package runtime

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tessera-amt/tessera/parcel"
)

// Typed collectives and channels: values of any type that can travel in a parcel (see
// Register) are encoded with its Codec and carried by the []float64
// collectives. []float64 values should use the Communicator's methods
// directly, which send them as raw chunks without this packing.

// BroadcastOf sends root's v to every site; the other sites' v is ignored.
func BroadcastOf[T any](ctx context.Context, c *Communicator, v T) *Future[T] {
	codec, err := NewCodec[T]()
	if err != nil {
		return MakeFailed[T](fmt.Errorf("runtime: BroadcastOf: %w", err))
	}
	var blob []float64
	if c.Site() == c.Root() {
		if blob, err = pack(codec, v); err != nil {
			return MakeFailed[T](fmt.Errorf("runtime: BroadcastOf: %w", err))
		}
	}
	return thenDecode(ctx, c.Broadcast(ctx, blob), func(b []float64) (T, error) { return unpack(codec, b) })
}

// AllGatherOf returns every site's v, in site order, on every site.
func AllGatherOf[T any](ctx context.Context, c *Communicator, v T) *Future[[]T] {
	codec, err := NewCodec[T]()
	if err != nil {
		return MakeFailed[[]T](fmt.Errorf("runtime: AllGatherOf: %w", err))
	}
	blob, err := pack(codec, v)
	if err != nil {
		return MakeFailed[[]T](fmt.Errorf("runtime: AllGatherOf: %w", err))
	}
	blocks := make([][]float64, c.Size())
	for i := range blocks {
		blocks[i] = blob
	}
	return thenDecode(ctx, c.AllToAllV(ctx, blocks), func(got [][]float64) ([]T, error) {
		out := make([]T, len(got))
		for i, b := range got {
			if out[i], err = unpack(codec, b); err != nil {
				return nil, fmt.Errorf("value of site %d: %w", i, err)
			}
		}
		return out, nil
	})
}

// AllReduceOf combines every site's v with op, in site order, on every
// site: op(...op(op(v0, v1), v2)..., vn-1). op need not be commutative.
func AllReduceOf[T any](ctx context.Context, c *Communicator, v T, op func(a, b T) T) *Future[T] {
	return thenDecode(ctx, AllGatherOf(ctx, c, v), func(vs []T) (T, error) {
		acc := vs[0]
		for _, x := range vs[1:] {
			acc = op(acc, x)
		}
		return acc, nil
	})
}

// thenDecode turns f's value with decode once it is ready, without a task:
// decoding is quick and must not depend on a free lane.
func thenDecode[A, B any](ctx context.Context, f *Future[A], decode func(A) (B, error)) *Future[B] {
	out := newFuture[B](f.sched)
	f.onReady(func() {
		a, err := f.result()
		if err != nil {
			out.set(*new(B), err)
			return
		}
		b, err := decode(a)
		out.set(b, err)
	})
	return out
}

// pack encodes v and lays the bytes into float64s:
//
//	u64 total bytes, u32 args length, u32 chunk count, args,
//	then per chunk u64 length and its bytes; zero padding to 8 bytes.
func pack[T any](codec Codec[T], v T) ([]float64, error) {
	args, chunks, err := codec.Encode(v, nil)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16, 16+len(args))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(args)))
	binary.LittleEndian.PutUint32(b[12:], uint32(len(chunks)))
	b = append(b, args...)
	for _, c := range chunks {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(c)))
		b = append(b, c...)
	}
	binary.LittleEndian.PutUint64(b, uint64(len(b)))
	out := make([]float64, (len(b)+7)/8)
	copy(parcel.Float64Bytes(out), b)
	return out, nil
}

func unpack[T any](codec Codec[T], f []float64) (T, error) {
	var zero T
	b := parcel.Float64Bytes(f)
	if len(b) < 16 {
		return zero, fmt.Errorf("packed value of %d bytes is too short", len(b))
	}
	total := binary.LittleEndian.Uint64(b)
	if total > uint64(len(b)) || total < 16 {
		return zero, fmt.Errorf("packed value claims %d bytes, has %d", total, len(b))
	}
	b = b[:total]
	nargs := uint64(binary.LittleEndian.Uint32(b[8:]))
	nchunks := int(binary.LittleEndian.Uint32(b[12:]))
	b = b[16:]
	if nargs > uint64(len(b)) {
		return zero, fmt.Errorf("packed arguments of %d bytes, %d left", nargs, len(b))
	}
	args := b[:nargs]
	b = b[nargs:]
	var chunks [][]byte
	for i := range nchunks {
		if len(b) < 8 {
			return zero, fmt.Errorf("packed chunk %d: length missing", i)
		}
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if n > uint64(len(b)) {
			return zero, fmt.Errorf("packed chunk %d of %d bytes, %d left", i, n, len(b))
		}
		// Copy: the chunk may become a []float64 that needs alignment, and
		// the collective's buffer may be reused.
		chunks = append(chunks, append([]byte(nil), b[:n]...))
		b = b[n:]
	}
	return codec.Decode(args, chunks)
}

// SetOf sends a value of any type that travels in a parcel to site under
// tag on ch; GetOf receives it.
func SetOf[T any](ctx context.Context, ch *Channel, site int, tag uint64, v T) *Future[struct{}] {
	codec, err := NewCodec[T]()
	if err != nil {
		return MakeFailed[struct{}](fmt.Errorf("runtime: SetOf: %w", err))
	}
	blob, err := pack(codec, v)
	if err != nil {
		return MakeFailed[struct{}](fmt.Errorf("runtime: SetOf: %w", err))
	}
	return ch.Set(ctx, site, tag, blob)
}

// GetOf receives the value site sent with SetOf under tag on ch.
func GetOf[T any](ctx context.Context, ch *Channel, site int, tag uint64) *Future[T] {
	codec, err := NewCodec[T]()
	if err != nil {
		return MakeFailed[T](fmt.Errorf("runtime: GetOf: %w", err))
	}
	return thenDecode(ctx, ch.Get(ctx, site, tag), func(b []float64) (T, error) { return unpack(codec, b) })
}
