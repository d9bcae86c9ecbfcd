package annotate

import (
	"fmt"
	"strings"
)

// Span is the half-open index range [Start, Stop) of a tile along one
// dimension.
type Span struct {
	Start, Stop int
}

// Len is the number of indices in s (0 when s is empty).
func (s Span) Len() int {
	if s.Stop <= s.Start {
		return 0
	}
	return s.Stop - s.Start
}

// Empty reports whether s holds no index.
func (s Span) Empty() bool { return s.Stop <= s.Start }

// Intersect returns the indices common to s and t, and whether there are
// any.
func (s Span) Intersect(t Span) (Span, bool) {
	r := Span{max(s.Start, t.Start), min(s.Stop, t.Stop)}
	if r.Empty() {
		return Span{}, false
	}
	return r, true
}

// Contains reports whether every index of t lies in s. An empty t is
// contained in every span.
func (s Span) Contains(t Span) bool {
	return t.Empty() || (s.Start <= t.Start && t.Stop <= s.Stop)
}

// String prints s as "[start, stop)".
func (s Span) String() string { return fmt.Sprintf("[%d, %d)", s.Start, s.Stop) }

// Block is a rectangular part of an array: one Span per dimension,
// outermost first, in the order of the array's shape (pages, rows, columns
// for 3-D; rows, columns for 2-D; columns for 1-D).
type Block []Span

// Size is the number of elements in b (1 for a 0-dimensional block).
func (b Block) Size() int {
	n := 1
	for _, s := range b {
		n *= s.Len()
	}
	return n
}

// Empty reports whether b holds no element.
func (b Block) Empty() bool { return b.Size() == 0 }

// Intersect returns the elements common to b and c, and whether there are
// any. Blocks of different dimensionality never intersect.
func (b Block) Intersect(c Block) (Block, bool) {
	if len(b) != len(c) {
		return nil, false
	}
	r := make(Block, len(b))
	for i := range b {
		s, ok := b[i].Intersect(c[i])
		if !ok {
			return nil, false
		}
		r[i] = s
	}
	return r, true
}

// Contains reports whether every element of c lies in b.
func (b Block) Contains(c Block) bool {
	if len(b) != len(c) {
		return false
	}
	if c.Empty() {
		return true
	}
	for i := range b {
		if !b[i].Contains(c[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether b and c have the same spans.
func (b Block) Equal(c Block) bool {
	if len(b) != len(c) {
		return false
	}
	for i := range b {
		if b[i] != c[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of b that shares no memory with it.
func (b Block) Clone() Block {
	if b == nil {
		return nil
	}
	return append(Block(nil), b...)
}

// String prints b with dimension names, e.g.
// "[pages [0, 1000), rows [0, 80), columns [0, 3)]".
func (b Block) String() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, s := range b {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(DimName(len(b), i))
		sb.WriteByte(' ')
		sb.WriteString(s.String())
	}
	sb.WriteByte(']')
	return sb.String()
}

// DimName names axis i (outermost first) of an ndim-dimensional array as
// the printed annotation does, following Phylanx: "columns" for a 1-D
// vector; "rows", "columns" for 2-D; "pages", "rows", "columns" for 3-D.
// Other values give "axis<i>".
func DimName(ndim, i int) string {
	if ndim >= 1 && ndim <= 3 && i >= 0 && i < ndim {
		return [...]string{"pages", "rows", "columns"}[3-ndim+i]
	}
	return fmt.Sprintf("axis%d", i)
}

// WholeBlock is the block covering an array of the given shape.
func WholeBlock(shape []int) Block {
	b := make(Block, len(shape))
	for i, d := range shape {
		b[i] = Span{0, d}
	}
	return b
}
