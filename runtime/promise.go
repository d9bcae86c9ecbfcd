package runtime

// NewPromise returns a future and the function that fulfils it, for layers
// that produce values outside a task (a message that arrives, a name that
// gets registered). Continuations of the future run as tasks on rt. Only
// the first call of fulfil has an effect; it reports whether it was first.
func NewPromise[T any](rt *Runtime) (f *Future[T], fulfil func(v T, err error) bool) {
	f = newFuture[T](rt.sched)
	return f, f.set
}
