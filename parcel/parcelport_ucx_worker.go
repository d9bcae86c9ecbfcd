//go:build ucx

package parcel

// The UCX worker of a UCX port, the only file that calls UCX. Callbacks
// are C functions that only append events to a queue the worker owns
// (an array of events and an arena of the AM headers' bytes); Go drains
// it after each ucp_worker_progress, so no Go code runs inside UCX and
// no C code calls Go. Every call of a worker is made with ucxWorker.mu
// held (the worker is UCS_THREAD_MODE_SERIALIZED).

/*
#cgo pkg-config: ucx
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <ucs/config/global_opts.h>

enum { TUX_AM = 1, TUX_DONE = 2, TUX_EP_ERROR = 3 };

typedef struct {
	int      kind;
	int      status;
	uint64_t id;     // TUX_DONE: the operation's id; TUX_EP_ERROR: the peer
	size_t   hoff;   // TUX_AM: the header's offset in the arena
	size_t   hlen;
	void    *data;   // TUX_AM: the data, or the rendezvous descriptor
	size_t   len;
	int      copied; // TUX_AM: the data follow the header in the arena
	uint64_t attr;   // TUX_AM: recv_attr
} tux_event;

typedef struct {
	ucp_context_h ctx;
	ucp_worker_h  worker;
	tux_event    *ev;
	size_t        nev, cap;
	char         *arena;
	size_t        used, acap;
	int           oom;
	int           no_peer_errors;
} tux_port;

static tux_event *tux_push(tux_port *p) {
	if (p->nev == p->cap) {
		size_t c = p->cap ? 2 * p->cap : 64;
		tux_event *e = realloc(p->ev, c * sizeof *e);
		if (e == NULL) { p->oom = 1; return NULL; }
		p->ev = e; p->cap = c;
	}
	tux_event *e = &p->ev[p->nev++];
	memset(e, 0, sizeof *e);
	return e;
}

// Eager data up to this long is copied into the arena behind its header,
// and UCX keeps no descriptor: nothing to release later.
enum { TUX_COPY_MAX = 8192 };

static ucs_status_t tux_am_cb(void *arg, const void *header, size_t hlen, void *data, size_t len, const ucp_am_recv_param_t *param) {
	tux_port *p = arg;
	int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
	size_t n = hlen + ((!rndv && len <= TUX_COPY_MAX) ? len : 0);
	if (p->used + n > p->acap) {
		size_t c = p->acap ? 2 * p->acap : 4096;
		while (c < p->used + n) c *= 2;
		char *a = realloc(p->arena, c);
		if (a == NULL) { p->oom = 1; return UCS_OK; }
		p->arena = a; p->acap = c;
	}
	tux_event *e = tux_push(p);
	if (e == NULL) return UCS_OK;
	memcpy(p->arena + p->used, header, hlen);
	e->kind = TUX_AM; e->hoff = p->used; e->hlen = hlen;
	e->len = len; e->attr = param->recv_attr;
	if (n > hlen) {
		if (len) memcpy(p->arena + p->used + hlen, data, len);
		e->copied = 1;
		p->used += n;
		return UCS_OK;
	}
	e->data = data;
	p->used += hlen;
	return (param->recv_attr & (UCP_AM_RECV_ATTR_FLAG_DATA | UCP_AM_RECV_ATTR_FLAG_RNDV)) ? UCS_INPROGRESS : UCS_OK;
}

static void tux_done(tux_port *p, uint64_t id, ucs_status_t st) {
	tux_event *e = tux_push(p);
	if (e == NULL) return;
	e->kind = TUX_DONE; e->id = id; e->status = st;
}

// The user data of an operation is its port and id; it lives in the
// request's own memory (ucp_params_t.request_size), so it costs no malloc.
typedef struct { tux_port *p; uint64_t id; } tux_req;

static void tux_send_cb(void *req, ucs_status_t st, void *user) {
	tux_req *r = req;
	tux_done(r->p, r->id, st);
	ucp_request_free(req);
}

static void tux_recv_cb(void *req, ucs_status_t st, size_t len, void *user) {
	tux_req *r = req;
	tux_done(r->p, r->id, st);
	ucp_request_free(req);
}

typedef struct { tux_port *p; uint64_t peer; } tux_ep_arg;

static void tux_ep_err(void *arg, ucp_ep_h ep, ucs_status_t st) {
	tux_ep_arg *a = arg;
	tux_event *e = tux_push(a->p);
	if (e == NULL) return;
	e->kind = TUX_EP_ERROR; e->id = a->peer; e->status = st;
}

static ucs_status_t tux_open(tux_port **out, int *efd) {
	tux_port *p = calloc(1, sizeof *p);
	if (p == NULL) return UCS_ERR_NO_MEMORY;
	ucp_params_t pp = {0};
	pp.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE;
	pp.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
	pp.request_size = sizeof(tux_req);
	ucp_config_t *cfg;
	ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
	if (st != UCS_OK) { free(p); return st; }
	st = ucp_init(&pp, cfg, &p->ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK) { free(p); return st; }
	ucp_worker_params_t wp = {0};
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
	st = ucp_worker_create(p->ctx, &wp, &p->worker);
	if (st != UCS_OK) { ucp_cleanup(p->ctx); free(p); return st; }
	ucp_am_handler_param_t hp = {0};
	hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
		UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
	hp.id = 0;
	hp.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
	hp.cb = tux_am_cb;
	hp.arg = p;
	st = ucp_worker_set_am_recv_handler(p->worker, &hp);
	if (st == UCS_OK) st = ucp_worker_get_efd(p->worker, efd);
	if (st != UCS_OK) { ucp_worker_destroy(p->worker); ucp_cleanup(p->ctx); free(p); return st; }
	*out = p;
	return UCS_OK;
}

static void tux_destroy(tux_port *p) {
	ucp_worker_destroy(p->worker);
	ucp_cleanup(p->ctx);
	free(p->ev); free(p->arena); free(p);
}

static ucs_status_t tux_address(tux_port *p, void **addr, size_t *len) {
	ucp_address_t *a;
	ucs_status_t st = ucp_worker_get_address(p->worker, &a, len);
	if (st != UCS_OK) return st;
	*addr = malloc(*len);
	if (*addr != NULL) memcpy(*addr, a, *len);
	ucp_worker_release_address(p->worker, a);
	return *addr == NULL ? UCS_ERR_NO_MEMORY : UCS_OK;
}

static size_t tux_max_am_header(tux_port *p) {
	ucp_worker_attr_t wa = {0};
	wa.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
	if (ucp_worker_query(p->worker, &wa) != UCS_OK) return 0;
	return wa.max_am_header;
}

static ucs_status_t tux_ep(tux_port *p, const void *addr, tux_ep_arg *arg, ucp_ep_h *ep) {
	ucp_ep_params_t ep_params = {0};
	ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
		UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep_params.address = addr;
	if (!p->no_peer_errors) {
		ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
		ep_params.err_handler.cb = tux_ep_err;
		ep_params.err_handler.arg = arg;
		// Transports without peer failure reports make UCX log an error
		// for this try, though there is a way on without them: quiet it.
		ucs_log_level_t level = ucs_global_opts.log_component.log_level;
		if (level > UCS_LOG_LEVEL_FATAL) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
		ucs_status_t st = ucp_ep_create(p->worker, &ep_params, ep);
		ucs_global_opts.log_component.log_level = level;
		if (st != UCS_ERR_UNREACHABLE) return st;
		// The transports cannot report a peer's failure (UCX 1.13's
		// shared-memory ones): do without; the TCP side watches the peer.
		p->no_peer_errors = 1;
	}
	ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
	ep_params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
	return ucp_ep_create(p->worker, &ep_params, ep);
}

// tux_status returns the status of a request pointer: UCS_OK for NULL,
// its error, or UCS_INPROGRESS for a request, whose completion comes as an
// event with id.
static ucs_status_t tux_status(tux_port *p, ucs_status_ptr_t r, uint64_t id) {
	if (r == NULL) return UCS_OK;
	if (UCS_PTR_IS_ERR(r)) return UCS_PTR_STATUS(r);
	// Callbacks run inside ucp_worker_progress only, which nobody calls
	// while this caller holds the worker: the id is set in time.
	tux_req *q = r;
	q->p = p; q->id = id;
	return UCS_INPROGRESS;
}

// tux_send sends an AM of header hdr and data: buf and len when iov is
// NULL (one buffer, or none), else the niov pieces of iov.
static ucs_status_t tux_send(tux_port *p, ucp_ep_h ep, const void *hdr, size_t hlen, uintptr_t buf, size_t len, ucp_dt_iov_t *iov, size_t niov, uint64_t id) {
	ucp_request_param_t rp = {0};
	rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
	rp.cb.send = tux_send_cb;
	rp.flags = 0;
	if (iov == NULL) {
		// One buffer (or none) goes as contiguous data, which small
		// messages can send at once (short, bcopy); IOV data cannot.
		rp.datatype = ucp_dt_make_contig(1);
		return tux_status(p, ucp_am_send_nbx(ep, 0, hdr, hlen, (void *)buf, len, &rp), id);
	}
	rp.datatype = ucp_dt_make_iov();
	return tux_status(p, ucp_am_send_nbx(ep, 0, hdr, hlen, iov, niov, &rp), id);
}

// tux_recv receives a rendezvous message into buf and len, or iov.
static ucs_status_t tux_recv(tux_port *p, void *desc, uintptr_t buf, size_t len, ucp_dt_iov_t *iov, size_t niov, uint64_t id) {
	ucp_request_param_t rp = {0};
	rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_DATATYPE;
	rp.cb.recv_am = tux_recv_cb;
	if (iov == NULL) {
		rp.datatype = ucp_dt_make_contig(1);
		return tux_status(p, ucp_am_recv_data_nbx(p->worker, desc, (void *)buf, len, &rp), id);
	}
	rp.datatype = ucp_dt_make_iov();
	return tux_status(p, ucp_am_recv_data_nbx(p->worker, desc, iov, niov, &rp), id);
}

static ucs_status_t tux_flush_ep(tux_port *p, ucp_ep_h ep, uint64_t id) {
	ucp_request_param_t rp = {0};
	rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
	rp.cb.send = tux_send_cb;
	return tux_status(p, ucp_ep_flush_nbx(ep, &rp), id);
}

// The calls of every message or poll take handles as integers: cgo
// checks each pointer argument for Go memory, wasted work on C's.
static unsigned tux_progress(uintptr_t p) { return ucp_worker_progress(((tux_port *)p)->worker); }
static ucs_status_t tux_send_c(uintptr_t p, uintptr_t ep, uintptr_t hdr, size_t hlen, uintptr_t buf, size_t len, uint64_t id) {
	return tux_send((tux_port *)p, (ucp_ep_h)ep, (const void *)hdr, hlen, buf, len, NULL, 0, id);
}
static void tux_signal(uintptr_t p) { ucp_worker_signal(((tux_port *)p)->worker); }

// tux_readable reports whether fd is readable now, without waiting.
static int tux_readable(int fd) {
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

static ucs_status_t tux_close_ep(tux_port *p, ucp_ep_h ep, int force, uint64_t id) {
	ucp_request_param_t rp = {0};
	rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
	rp.cb.send = tux_send_cb;
	rp.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
	return tux_status(p, ucp_ep_close_nbx(ep, &rp), id);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// ucxStatus is a UCX status as an error, with UCX's words for it.
type ucxStatus struct {
	op string
	st C.ucs_status_t
}

func (e *ucxStatus) Error() string {
	return fmt.Sprintf("UCX %s: %s", e.op, C.GoString(C.ucs_status_string(e.st)))
}

func ucxErr(op string, st C.ucs_status_t) error {
	if st == C.UCS_OK {
		return nil
	}
	return &ucxStatus{op, st}
}

// ucxWorker is a UCX context and its one worker.
type ucxWorker struct {
	mu   sync.Mutex // held for every call of the worker
	p    *C.tux_port
	up   C.uintptr_t // p as an integer, for the calls of every message
	efd  int
	addr []byte // the worker's address, what peers create endpoints to
	maxH int    // the largest AM header the worker sends

	// C memory small sends are copied into (sendScratch), scap bytes.
	sbuf unsafe.Pointer
	scap int
}

// scratch returns the worker's C memory for a copied send, at least n
// bytes. mu held.
func (w *ucxWorker) scratch(n int) []byte {
	if w.scap < n {
		if w.sbuf != nil {
			C.free(w.sbuf)
		}
		w.scap = max(n, 16<<10)
		w.sbuf = C.malloc(C.size_t(w.scap))
	}
	return cView(w.sbuf, w.scap)
}

// takeScratch hands the scratch memory to a send UCX did not finish at
// once; the next send gets new memory. mu held.
func (w *ucxWorker) takeScratch() unsafe.Pointer {
	b := w.sbuf
	w.sbuf, w.scap = nil, 0
	return b
}

// sendScratch posts an AM whose header (hlen bytes) and data (n bytes)
// were copied into the scratch memory, in that order; see send. mu held.
func (w *ucxWorker) sendScratch(e *ucxEndpoint, hlen, n int, id uint64) (done bool, err error) {
	hdr := C.uintptr_t(uintptr(w.sbuf))
	st := C.tux_send_c(w.up, e.up, hdr, C.size_t(hlen), hdr+C.uintptr_t(hlen), C.size_t(n), C.uint64_t(id))
	if st == C.UCS_INPROGRESS {
		return false, nil
	}
	return true, ucxErr("am send", st)
}

// ucxVersion is the version of the UCX library linked.
func ucxVersion() string { return C.GoString(C.ucp_get_version_string()) }

// openUCXWorker reads UCX's configuration from the environment (UCX_TLS,
// UCX_NET_DEVICES, ...), creates the context and the worker and registers
// the AM handler.
func openUCXWorker() (*ucxWorker, error) {
	w := &ucxWorker{}
	var efd C.int
	if st := C.tux_open(&w.p, &efd); st != C.UCS_OK {
		return nil, ucxErr(fmt.Sprintf("init (UCX_TLS=%q, UCX_NET_DEVICES=%q)", os.Getenv("UCX_TLS"), os.Getenv("UCX_NET_DEVICES")), st)
	}
	w.efd = int(efd)
	w.up = C.uintptr_t(uintptr(unsafe.Pointer(w.p)))
	var a unsafe.Pointer
	var n C.size_t
	if st := C.tux_address(w.p, &a, &n); st != C.UCS_OK {
		C.tux_destroy(w.p)
		return nil, ucxErr("worker address", st)
	}
	w.addr = C.GoBytes(a, C.int(n))
	C.free(a)
	w.maxH = int(C.tux_max_am_header(w.p))
	return w, nil
}

// ucxEndpoint is an endpoint to a peer's worker. arg is C memory the error
// callback is given, freed once the endpoint is closed.
type ucxEndpoint struct {
	ep  C.ucp_ep_h
	up  C.uintptr_t // ep as an integer
	arg *C.tux_ep_arg
}

// connect creates an endpoint to the worker at addr of peer. mu held.
func (w *ucxWorker) connect(peer uint32, addr []byte) (*ucxEndpoint, error) {
	if len(addr) == 0 {
		return nil, errors.New("empty UCX worker address")
	}
	ca := C.CBytes(addr)
	defer C.free(ca)
	arg := (*C.tux_ep_arg)(C.calloc(1, C.size_t(unsafe.Sizeof(C.tux_ep_arg{}))))
	arg.p, arg.peer = w.p, C.uint64_t(peer)
	e := &ucxEndpoint{arg: arg}
	if st := C.tux_ep(w.p, ca, arg, &e.ep); st != C.UCS_OK {
		C.free(unsafe.Pointer(arg))
		return nil, ucxErr("endpoint", st)
	}
	e.up = C.uintptr_t(uintptr(unsafe.Pointer(e.ep)))
	return e, nil
}

// ucxIOV is the description of the memory of one operation: one buffer
// (buf, n bytes), or an IOV array in C memory (iov, n pieces); the Go
// memory they point to is pinned until the operation ends. One buffer
// costs no C allocation, so no call into C to make and free it; it is
// described as contig only when newUCXIOV is asked to.
type ucxIOV struct {
	iov *C.ucp_dt_iov_t
	buf unsafe.Pointer
	n   int
	pin runtime.Pinner
}

func newUCXIOV(bufs [][]byte, contig bool) *ucxIOV {
	v := &ucxIOV{}
	n := 0
	for _, b := range bufs {
		if len(b) > 0 {
			n++
		}
	}
	if n == 0 || n == 1 && contig {
		for _, b := range bufs {
			if len(b) > 0 {
				v.pin.Pin(&b[0])
				v.buf, v.n = unsafe.Pointer(&b[0]), len(b)
			}
		}
		return v
	}
	v.iov = (*C.ucp_dt_iov_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.ucp_dt_iov_t{}))))
	s := unsafe.Slice(v.iov, n)
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		v.pin.Pin(&b[0])
		s[v.n] = C.ucp_dt_iov_t{buffer: unsafe.Pointer(&b[0]), length: C.size_t(len(b))}
		v.n++
	}
	return v
}

func (v *ucxIOV) free() {
	v.pin.Unpin()
	if v.iov != nil {
		C.free(unsafe.Pointer(v.iov))
	}
}

// args are the data arguments of tux_send and tux_recv. The one buffer
// goes as an address, as the IOV array's pieces do: a chunk may lie in an
// allocation that also holds pointers, which cgo's check of a pointer
// argument would reject; its memory is pinned and C reads only its bytes.
func (v *ucxIOV) args() (buf C.uintptr_t, n C.size_t, iov *C.ucp_dt_iov_t, niov C.size_t) {
	if v.iov == nil {
		return C.uintptr_t(uintptr(v.buf)), C.size_t(v.n), nil, 0
	}
	return 0, 0, v.iov, C.size_t(v.n)
}

// send posts an AM of header hdr (C memory) and data bufs to e, operation
// id. It returns done when the send completed at once (or failed), else
// the completion comes as an event for id. mu held.
func (w *ucxWorker) send(e *ucxEndpoint, hdr unsafe.Pointer, hlen int, v *ucxIOV, id uint64) (done bool, err error) {
	buf, n, iov, niov := v.args()
	st := C.tux_send(w.p, e.ep, hdr, C.size_t(hlen), buf, n, iov, niov, C.uint64_t(id))
	if st == C.UCS_INPROGRESS {
		return false, nil
	}
	return true, ucxErr("am send", st)
}

// recv starts the rendezvous receive of desc into v. mu held.
func (w *ucxWorker) recv(desc unsafe.Pointer, v *ucxIOV, id uint64) (done bool, err error) {
	buf, n, iov, niov := v.args()
	st := C.tux_recv(w.p, desc, buf, n, iov, niov, C.uint64_t(id))
	if st == C.UCS_INPROGRESS {
		return false, nil
	}
	return true, ucxErr("am receive", st)
}

// release gives back the memory of an eager message's data, unless it was
// copied (nil). mu held.
func (w *ucxWorker) release(data unsafe.Pointer) {
	if data != nil {
		C.ucp_am_data_release(w.p.worker, data)
	}
}

// closeEndpoint closes e, flushing what was sent unless force. mu held.
func (w *ucxWorker) closeEndpoint(e *ucxEndpoint, force bool, id uint64) (done bool, err error) {
	f := C.int(0)
	if force {
		f = 1
	}
	st := C.tux_close_ep(w.p, e.ep, f, C.uint64_t(id))
	if st == C.UCS_INPROGRESS {
		return false, nil
	}
	return true, ucxErr("endpoint close", st)
}

// flushEndpoint completes at e's peer what was sent to it. mu held.
func (w *ucxWorker) flushEndpoint(e *ucxEndpoint, id uint64) (done bool, err error) {
	st := C.tux_flush_ep(w.p, e.ep, C.uint64_t(id))
	if st == C.UCS_INPROGRESS {
		return false, nil
	}
	return true, ucxErr("endpoint flush", st)
}

// progress runs the worker once and reports whether it did something. mu
// held.
func (w *ucxWorker) progress() bool { return C.tux_progress(w.up) != 0 }

// arm readies the event descriptor for waiting; false: events are pending,
// progress first. mu held.
func (w *ucxWorker) arm() (bool, error) {
	switch st := C.ucp_worker_arm(w.p.worker); st {
	case C.UCS_OK:
		return true, nil
	case C.UCS_ERR_BUSY:
		return false, nil
	default:
		return false, ucxErr("worker arm", st)
	}
}

// readable reports whether the event descriptor fd (the worker's, or a
// duplicate of it) is readable now: the level, not an edge. Any goroutine.
func readable(fd uintptr) bool { return C.tux_readable(C.int(fd)) != 0 }

// signal wakes whoever waits on the event descriptor; any goroutine.
func (w *ucxWorker) signal() { C.tux_signal(w.up) }

// ucxEvent is a drained event.
type ucxEvent struct {
	kind   int
	status C.ucs_status_t
	id     uint64
	hdr    []byte         // AM: a view of the arena, valid until the next drain
	data   unsafe.Pointer // AM: UCX's data or rendezvous descriptor, nil if copied
	len    int
	rndv   bool
	copied []byte // AM: the data, copied into the arena (valid as hdr)
}

const (
	ucxEvAM      = C.TUX_AM
	ucxEvDone    = C.TUX_DONE
	ucxEvEPError = C.TUX_EP_ERROR
)

// drain calls f for each queued event, then empties the queue. f must not
// progress the worker. mu held.
func (w *ucxWorker) drain(f func(ev *ucxEvent)) error {
	p := w.p
	if p.oom != 0 {
		return errors.New("UCX event queue: out of memory")
	}
	if p.nev == 0 {
		return nil
	}
	evs := unsafe.Slice(p.ev, int(p.nev))
	var ev ucxEvent
	for i := range evs {
		e := &evs[i]
		ev = ucxEvent{kind: int(e.kind), status: C.ucs_status_t(e.status), id: uint64(e.id), data: e.data, len: int(e.len)}
		if ev.kind == ucxEvAM {
			ev.hdr = unsafe.Slice((*byte)(unsafe.Pointer(uintptr(unsafe.Pointer(p.arena))+uintptr(e.hoff))), int(e.hlen))
			ev.rndv = e.attr&C.UCP_AM_RECV_ATTR_FLAG_RNDV != 0
			if e.copied != 0 {
				ev.copied = unsafe.Slice((*byte)(unsafe.Pointer(uintptr(unsafe.Pointer(p.arena))+uintptr(e.hoff+e.hlen))), ev.len)
				ev.data = nil
			}
		}
		f(&ev)
	}
	p.nev, p.used = 0, 0
	return nil
}

// freeC frees C memory.
func freeC(p unsafe.Pointer) { C.free(p) }

// close destroys the worker and the context; every endpoint must be
// closed. mu held.
func (w *ucxWorker) close() {
	C.tux_destroy(w.p)
	if w.sbuf != nil {
		C.free(w.sbuf)
		w.sbuf, w.scap = nil, 0
	}
}

// freeEndpoint frees e's C memory once it is closed.
func (e *ucxEndpoint) free() { C.free(unsafe.Pointer(e.arg)) }
