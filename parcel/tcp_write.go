package parcel

// The write path of the TCP parcelport: senders that find the connection
// busy queue their parcels, and whoever holds the connection writes what
// is queued in batches (flat combining), small frames copied into one
// buffer, others gathered into one writev.

// kickWriter wakes the writer goroutine to drain the queue.
func (p *tcpPeer) kickWriter() {
	select {
	case p.kick <- struct{}{}:
	default: // already kicked
	}
}

// unlock releases p.wmu for a holder that does not combine. A sender that
// queued a request and then failed to take the lock leaves the request to
// whoever holds it, so every holder, once it lets go, sees that the queue
// is drained: combine does so itself, unlock hands the queue to the writer.
func (p *tcpPeer) unlock() {
	p.wmu.Unlock()
	if len(p.queue) > 0 {
		p.kickWriter()
	}
}

// failQueued answers every request in the queue with downErr. It is for
// when p is down; it needs no lock, since nothing queued is written then.
func (p *tcpPeer) failQueued() {
	for {
		select {
		case r := <-p.queue:
			r.done <- p.downErr
		default:
			return
		}
	}
}

// combine writes the requests waiting in p.queue, in batches of at most
// MaxBatch parcels (and about maxBatchBytes bytes), one writev each,
// and answers each request once its batch is written. It is called with
// p.wmu held and releases it.
//
// After the unlock it looks at the queue again: a sender that queued a
// request after the last look and failed to take the lock left the request
// to this holder. It then takes the lock again; if someone else has taken
// it, the duty is theirs.
//
// combine takes at most limit requests (no limit if negative), so that a
// sender that writes for others is held up for a bounded time; if it leaves
// requests, the writer goroutine takes over. After a failed write it stops:
// the connection is down, and the senders still queued answer themselves.
func (t *TCP) combine(p *tcpPeer, limit int) {
	// Most often nothing is queued: let go without making room for a batch.
	for len(p.queue) == 0 {
		p.wmu.Unlock()
		if len(p.queue) == 0 || !p.wmu.TryLock() {
			return
		}
	}
	t.combineQueued(p, limit)
}

// combineQueued is combine once something is queued.
func (t *TCP) combineQueued(p *tcpPeer, limit int) {
	var buf [maxBatchParcels]*sendReq
	for {
		for {
			batch, size := buf[:0], 0
		gather:
			for limit != 0 && len(batch) < t.cfg.MaxBatch && size < maxBatchBytes {
				select {
				case r := <-p.queue:
					batch = append(batch, r)
					size += r.p.Size()
					limit--
				default:
					break gather
				}
			}
			if len(batch) == 0 {
				break
			}
			err := p.usable()
			var werr error
			if err == nil {
				werr = t.writeBatch(p, batch)
			}
			if werr != nil {
				p.wmu.Unlock()
				err = t.writeFailed(p, werr)
				answer(batch, err)
				return
			}
			answer(batch, err)
		}
		p.wmu.Unlock()
		switch {
		case len(p.queue) == 0:
			return
		case limit == 0:
			p.kickWriter()
			return
		case !p.wmu.TryLock():
			return // the holder drains it
		}
	}
}

// answer tells the senders of batch how their parcels fared. A request may
// go back to the pool as soon as it is answered: it is not touched after.
func answer(batch []*sendReq, err error) {
	for _, r := range batch {
		r.done <- err
	}
}

func (t *TCP) writeOne(p *tcpPeer, pc *Parcel) error {
	one := [1]*sendReq{{p: pc}}
	return t.writeBatch(p, one[:])
}

// writeBatch writes the frames of batch: small ones (chunks of at most
// smallCopy bytes in all) copied into one buffer and written with one
// write, others with one writev that sends the chunks from where they are.
// Callers hold p.wmu.
func (t *TCP) writeBatch(p *tcpPeer, batch []*sendReq) error {
	buf := p.scratch[:0]
	var err error
	if smallBatch(batch) {
		for _, r := range batch {
			if buf, err = appendFrameHead(buf, &r.p.Header, r.p.Chunks); err != nil {
				return err
			}
			for _, c := range r.p.Chunks {
				buf = append(buf, c...)
			}
		}
		p.scratch = buf
		n, err := p.write(buf)
		return t.wrote(p, batch, n, err)
	}
	var ends [maxBatchParcels]int
	for i, r := range batch {
		if buf, err = appendFrameHead(buf, &r.p.Header, r.p.Chunks); err != nil {
			return err
		}
		ends[i] = len(buf)
	}
	p.scratch = buf
	bufs := p.iovs[:0]
	start := 0
	for i, r := range batch {
		if len(r.p.Chunks) == 0 {
			continue // its head merges with the next one's
		}
		bufs = append(bufs, buf[start:ends[i]])
		start = ends[i]
		for _, c := range r.p.Chunks {
			if len(c) > 0 {
				bufs = append(bufs, c)
			}
		}
	}
	if start < len(buf) {
		bufs = append(bufs, buf[start:])
	}
	p.iov = bufs
	n, err := p.iov.WriteTo(p.conn)
	clear(bufs) // keeps no chunk of the caller's alive
	p.iovs, p.iov = bufs[:0], nil
	return t.wrote(p, batch, int(n), err)
}

// smallCopy is the payload size up to which a batch's chunks are copied
// next to their frame heads and written with one write instead of a writev.
const smallCopy = 4 << 10

// smallBatch says whether the chunks of batch are small enough to copy.
func smallBatch(batch []*sendReq) bool {
	n := 0
	for _, r := range batch {
		for _, c := range r.p.Chunks {
			if n += len(c); n > smallCopy {
				return false
			}
		}
	}
	return true
}

// wrote counts a write of n bytes of batch that ended with err.
func (t *TCP) wrote(p *tcpPeer, batch []*sendReq, n int, err error) error {
	p.ctr.writes.Add(1)
	p.ctr.bytesSent.Add(uint64(n))
	if err == nil {
		parcels := uint64(0)
		for _, r := range batch {
			if counted(&r.p.Header) {
				parcels++
			}
		}
		p.ctr.parcelsSent.Add(parcels)
	}
	return err
}
