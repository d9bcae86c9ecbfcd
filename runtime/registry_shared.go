package runtime

import "fmt"

// Shared returns the value reg holds under key, making it with create on
// the first call for that key. A package whose constructor registers
// actions (agas.New, primitives.Register) goes through it, so that a
// program calling the constructor twice on one registry shares one
// service by design instead of registering the same actions twice. The
// key names the package; a value of another type already under it
// panics, naming the key and both types.
func Shared[T any](reg *Registry, key string, create func() *T) *T {
	reg.sharedMu.Lock()
	defer reg.sharedMu.Unlock()
	if v, ok := reg.shared[key]; ok {
		t, ok := v.(*T)
		if !ok {
			panic(fmt.Sprintf("runtime: Shared(%q): the registry holds a %T there, not a %T", key, v, t))
		}
		return t
	}
	t := create()
	if reg.shared == nil {
		reg.shared = make(map[string]any)
	}
	reg.shared[key] = t
	return t
}
