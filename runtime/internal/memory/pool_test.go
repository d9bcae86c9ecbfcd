package memory

import "testing"

func TestPoolTakesExactThenShortestLongerBuffer(t *testing.T) {
	p := NewPool(1 << 30)
	short, long := make([]float64, 1100), make([]float64, 1200)
	p.Put(long)
	p.Put(short)
	if b := p.Take(2000); b != nil {
		t.Fatalf("Take(2000) with buffers of 1100 and 1200 = %d float64s, want nil", len(b))
	}
	if b := p.Take(800); b != nil {
		t.Fatalf("Take(800) = %d float64s, want nil: 1100 is more than a quarter longer", len(b))
	}
	b := p.Take(1000)
	if len(b) != 1000 || cap(b) != 1000 || &b[0] != &short[0] {
		t.Fatalf("Take(1000) = len %d cap %d, want the 1100 buffer cut to 1000", len(b), cap(b))
	}
	if bytes, _ := p.Held(); bytes != 8*1200 {
		t.Fatalf("the pool holds %d bytes after the take, want %d", bytes, 8*1200)
	}
	p.Put(b)
	if got := p.Take(1000); len(got) != 1000 || &got[0] != &short[0] {
		t.Fatalf("Take(1000) after putting it back did not return the same memory")
	}
	if got := p.Take(1200); len(got) != 1200 || &got[0] != &long[0] {
		t.Fatalf("Take(1200) did not return the buffer of exactly that length")
	}
	if got := p.Take(1000); got != nil {
		t.Fatalf("Take from an empty pool = %d float64s, want nil", len(got))
	}
}
