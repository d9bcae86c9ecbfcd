package annotate

import (
	"fmt"
	"strconv"
	"strings"
)

// Annotation is the metadata of a distributed array as one locality sees
// it: the array's name and generation, this locality, and every tile
// (Tiling.Tiles[i] is held by locality i, so the number of localities is
// the number of tiles). All localities hold equal annotations except for
// Locality.
type Annotation struct {
	// Name is the array's name, unique in the job (the AGAS basename).
	// It must be non-empty and free of '"', '\\' and control characters.
	Name string
	// Generation counts the results derived from the array; see Next.
	Generation int
	// Locality is the index of the locality holding this annotation.
	Locality int
	// Tiling is the array's shape and tiles, one per locality.
	Tiling Tiling
}

// NewAnnotation returns the generation-0 annotation of array name as seen by
// locality, after checking it with Validate.
func NewAnnotation(name string, locality int, t Tiling) (Annotation, error) {
	a := Annotation{Name: name, Locality: locality, Tiling: t.Clone()}
	if err := a.Validate(); err != nil {
		return Annotation{}, err
	}
	return a, nil
}

// Localities is the number of localities the array is spread over.
func (a Annotation) Localities() int { return len(a.Tiling.Tiles) }

// Local is the tile held by a.Locality.
func (a Annotation) Local() Tile { return a.Tiling.Tiles[a.Locality] }

// FullName is the name as printed: "name/generation".
func (a Annotation) FullName() string { return a.Name + "/" + strconv.Itoa(a.Generation) }

// Next returns a deep copy of a with the generation incremented: the
// annotation of a result derived from a.
func (a Annotation) Next() Annotation {
	b := a.Clone()
	b.Generation++
	return b
}

// Clone returns a deep copy of a.
func (a Annotation) Clone() Annotation {
	b := a
	b.Tiling = a.Tiling.Clone()
	return b
}

// Equal reports whether a and b are the same annotation.
func (a Annotation) Equal(b Annotation) bool {
	return a.Name == b.Name && a.Generation == b.Generation &&
		a.Locality == b.Locality && a.Tiling.Equal(b.Tiling)
}

// Validate checks the name, a non-negative generation, a locality in
// [0, Localities()) and the tiling (see Tiling.Validate).
func (a Annotation) Validate() error {
	if err := checkName(a.Name); err != nil {
		return err
	}
	if a.Generation < 0 {
		return fmt.Errorf("annotate: array %q has negative generation %d", a.Name, a.Generation)
	}
	if err := a.Tiling.Validate(); err != nil {
		return fmt.Errorf("annotate: array %q: %s", a.Name, strings.TrimPrefix(err.Error(), "annotate: "))
	}
	if a.Locality < 0 || a.Locality >= a.Localities() {
		return fmt.Errorf("annotate: array %q: locality %d is not in [0, %d)", a.Name, a.Locality, a.Localities())
	}
	return nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("annotate: empty array name")
	}
	for _, r := range name {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("annotate: array name %q contains %q", name, r)
		}
	}
	return nil
}

// String prints a in the form of Listing 3 of the JetLag paper, on one
// line, dimensions outermost first:
//
//	annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 0, 2], ["name", "HAR_csv_1/0"])
//
// "tile" gives the block the locality stores (Tile.Halo). When a tile has
// an overlap, its owned block follows as ["owned", ...] inside the same
// meta entry; without overlap the output is exactly the paper's. A
// block-cyclic tiling adds its layout as a ["blockcyclic", ...] entry
// after the tiles, which are then in storage coordinates (Cyclic).
func (a Annotation) String() string {
	var sb strings.Builder
	sb.WriteString(`annotation("localities"`)
	for i, tl := range a.Tiling.Tiles {
		fmt.Fprintf(&sb, `, ["meta_%d", `, i)
		writeBlock(&sb, "tile", tl.Halo)
		if !tl.Owned.Equal(tl.Halo) {
			sb.WriteString(", ")
			writeBlock(&sb, "owned", tl.Owned)
		}
		sb.WriteByte(']')
	}
	if c := a.Tiling.Cyclic; c != nil {
		sb.WriteString(", ")
		writeCyclic(&sb, *c)
	}
	fmt.Fprintf(&sb, `, ["locality", %d, %d], ["name", "%s"])`, a.Locality, a.Localities(), a.FullName())
	return sb.String()
}

func writeBlock(sb *strings.Builder, key string, b Block) {
	fmt.Fprintf(sb, `[%q`, key)
	for d, s := range b {
		fmt.Fprintf(sb, `, [%q, %d, %d]`, DimName(len(b), d), s.Start, s.Stop)
	}
	sb.WriteByte(']')
}
