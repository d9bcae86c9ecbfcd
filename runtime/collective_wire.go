package runtime

import (
	"fmt"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tinylib/msgp/msgp"
)

// The wire form of collective messages: the header in a control parcel's
// Args, the calls of an abort, and the shared memory descriptors of
// lent values.

// collHeader is the metadata of a collective message.
type collHeader struct {
	base  string
	gen   uint64
	step  uint32
	from  uint32 // sender's site index
	op    collOp
	count uint64 // elements in the sender's call, or anyCount
}

func (h *collHeader) appendTo(b []byte) []byte {
	b = msgp.AppendString(b, h.base)
	b = msgp.AppendUint64(b, h.gen)
	b = msgp.AppendUint32(b, h.step)
	b = msgp.AppendUint32(b, h.from)
	b = msgp.AppendUint8(b, uint8(h.op))
	return msgp.AppendUint64(b, h.count)
}

// readCollHeader decodes a collHeader but for its basename, which it
// returns as a view of b's bytes.
func readCollHeader(b []byte) (h collHeader, base, rest []byte, err error) {
	var op uint8
	if base, b, err = msgp.ReadStringZC(b); err != nil {
		return
	}
	if h.gen, b, err = msgp.ReadUint64Bytes(b); err != nil {
		return
	}
	if h.step, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if h.from, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if op, b, err = msgp.ReadUint8Bytes(b); err != nil {
		return
	}
	h.op = collOp(op)
	h.count, b, err = msgp.ReadUint64Bytes(b)
	return h, base, b, err
}

func appendCall(b []byte, c CollectiveCall) []byte {
	b = msgp.AppendInt(b, c.Site)
	b = msgp.AppendUint32(b, c.Locality)
	b = msgp.AppendString(b, c.Op)
	return msgp.AppendInt64(b, c.Count)
}

func readCall(b []byte) (c CollectiveCall, rest []byte, err error) {
	if c.Site, b, err = msgp.ReadIntBytes(b); err != nil {
		return
	}
	if c.Locality, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if c.Op, b, err = msgp.ReadStringBytes(b); err != nil {
		return
	}
	c.Count, b, err = msgp.ReadInt64Bytes(b)
	return c, b, err
}

func appendDesc(b []byte, d shm.Desc) []byte {
	b = msgp.AppendInt32(b, d.PID)
	b = msgp.AppendInt32(b, d.FD)
	b = msgp.AppendUint64(b, d.Ino)
	return msgp.AppendUint64(b, d.N)
}

func appendDescs(b []byte, ds []shm.Desc) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(ds)))
	for _, d := range ds {
		b = appendDesc(b, d)
	}
	return b
}

func readDescs(b []byte) ([]shm.Desc, error) {
	k, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil, fmt.Errorf("segment descriptors: %w", err)
	}
	if int(k) > len(b) {
		return nil, fmt.Errorf("segment descriptors: %d in %d bytes", k, len(b))
	}
	ds := make([]shm.Desc, k)
	for i := range ds {
		if ds[i], b, err = readDesc(b); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

func readDesc(b []byte) (d shm.Desc, rest []byte, err error) {
	if d.PID, b, err = msgp.ReadInt32Bytes(b); err == nil {
		if d.FD, b, err = msgp.ReadInt32Bytes(b); err == nil {
			if d.Ino, b, err = msgp.ReadUint64Bytes(b); err == nil {
				d.N, b, err = msgp.ReadUint64Bytes(b)
			}
		}
	}
	if err != nil {
		return d, b, fmt.Errorf("segment descriptor: %w", err)
	}
	return d, b, nil
}
