package runtime

import (
	"strings"
	"testing"
)

func TestSharedMakesOncePerRegistry(t *testing.T) {
	reg := NewRegistry()
	made := 0
	create := func() *int { made++; v := 7; return &v }
	a := Shared(reg, "svc", create)
	b := Shared(reg, "svc", create)
	if a != b || made != 1 {
		t.Fatalf("Shared twice: %p, %p, made %d times; want one value made once", a, b, made)
	}
	if c := Shared(NewRegistry(), "svc", create); c == a || made != 2 {
		t.Errorf("another registry shares the first one's value")
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, `Shared("svc")`) || !strings.Contains(msg, "*int") || !strings.Contains(msg, "*string") {
			t.Errorf("a value of another type under the key: panic %q, want one naming the key and both types", msg)
		}
	}()
	Shared(reg, "svc", func() *string { s := ""; return &s })
}
