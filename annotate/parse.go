package annotate

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads an annotation in the form Annotation.String prints (the form
// of Listing 3). Whitespace, including newlines, may appear between
// tokens. Entries after "localities" may come in any order, and the spans
// of a tile in any order of dimensions; a 1-D tile may name its dimension
// "rows" instead of "columns", as Phylanx accepts for vectors. The array's
// shape is the largest stop of the owned spans along each dimension. A
// ["blockcyclic", ...] entry (Annotation.String) makes the tiling
// block-cyclic; its tiles must then be those of the layout.
//
// Malformed text gives an error naming the byte offset and what was
// expected there; well-formed text that describes no valid tiling gives
// the error of Annotation.Validate.
//
// Listing 3 as typeset in the paper leaves each "meta_i" list unclosed and
// breaks the string "localities" across lines; Parse wants balanced
// brackets and whole strings, as String prints.
func Parse(text string) (Annotation, error) {
	p := &parser{src: text}
	call, err := p.call()
	if err == nil {
		var a Annotation
		if a, err = interpret(call); err == nil {
			return a, nil
		}
	}
	if pe, ok := err.(*ParseError); ok {
		pe.Line = 1 + strings.Count(text[:pe.Offset], "\n")
		pe.Column = pe.Offset - strings.LastIndexByte(text[:pe.Offset], '\n')
	}
	return Annotation{}, err
}

type nodeKind int

const (
	nString nodeKind = iota
	nInt
	nList
)

type node struct {
	kind nodeKind
	pos  int
	str  string
	num  int
	list []node
}

func (n node) describe() string {
	switch n.kind {
	case nString:
		return strconv.Quote(n.str)
	case nInt:
		return strconv.Itoa(n.num)
	default:
		return "a list"
	}
}

// ParseError is the error Parse returns for malformed text.
type ParseError struct {
	Offset       int    // byte offset in the text
	Line, Column int    // 1-based line and byte column of Offset
	Expected     string // what the parser wanted there
	Found        string // what it found
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("annotate: parse error at offset %d (line %d, column %d): expected %s, found %s",
		e.Offset, e.Line, e.Column, e.Expected, e.Found)
}

type parser struct {
	src string
	pos int
}

func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) found() string {
	if p.pos >= len(p.src) {
		return "end of text"
	}
	r := p.src[p.pos:]
	if len(r) > 12 {
		r = r[:12] + "..."
	}
	return strconv.Quote(r)
}

func (p *parser) fail(expected string) error {
	return &ParseError{Offset: p.pos, Expected: expected, Found: p.found()}
}

func (p *parser) expect(c byte, what string) error {
	p.skip()
	if p.pos < len(p.src) && p.src[p.pos] == c {
		p.pos++
		return nil
	}
	return p.fail(what)
}

// call parses `annotation(value, ...)` followed by nothing but space.
func (p *parser) call() (node, error) {
	p.skip()
	start := p.pos
	const ident = "annotation"
	if !strings.HasPrefix(p.src[p.pos:], ident) {
		return node{}, p.fail(`"annotation("`)
	}
	p.pos += len(ident)
	if err := p.expect('(', `"(" after annotation`); err != nil {
		return node{}, err
	}
	args, err := p.items(')')
	if err != nil {
		return node{}, err
	}
	p.skip()
	if p.pos != len(p.src) {
		return node{}, p.fail("end of text after annotation(...)")
	}
	return node{kind: nList, pos: start, list: args}, nil
}

// items parses `value, value, ... close` after the opening bracket.
func (p *parser) items(close byte) ([]node, error) {
	var out []node
	p.skip()
	if p.pos < len(p.src) && p.src[p.pos] == close {
		p.pos++
		return out, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skip()
		if p.pos < len(p.src) {
			switch p.src[p.pos] {
			case ',':
				p.pos++
				continue
			case close:
				p.pos++
				return out, nil
			}
		}
		return nil, p.fail(fmt.Sprintf(`"," or %q`, string(close)))
	}
}

func (p *parser) value() (node, error) {
	p.skip()
	if p.pos >= len(p.src) {
		return node{}, p.fail("a string, an integer or a list")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '[':
		p.pos++
		l, err := p.items(']')
		if err != nil {
			return node{}, err
		}
		return node{kind: nList, pos: start, list: l}, nil
	case c == '"':
		p.pos++
		for p.pos < len(p.src) {
			switch p.src[p.pos] {
			case '"':
				p.pos++
				return node{kind: nString, pos: start, str: p.src[start+1 : p.pos-1]}, nil
			case '\\', '\n', '\r':
				return node{}, p.fail(`closing '"' (strings hold no escapes or line breaks)`)
			}
			p.pos++
		}
		return node{}, p.fail(`closing '"'`)
	case c == '-' || (c >= '0' && c <= '9'):
		p.pos++
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil {
			p.pos = start
			return node{}, p.fail("an integer that fits in an int")
		}
		return node{kind: nInt, pos: start, num: v}, nil
	default:
		return node{}, p.fail("a string, an integer or a list")
	}
}

func bad(n node, expected string) error {
	return &ParseError{Offset: n.pos, Expected: expected, Found: n.describe()}
}

// keyed checks that n is a list starting with a string and returns that
// string.
func keyed(n node, expected string) (string, error) {
	if n.kind != nList || len(n.list) == 0 || n.list[0].kind != nString {
		return "", bad(n, expected)
	}
	return n.list[0].str, nil
}

func interpret(call node) (Annotation, error) {
	args := call.list
	if len(args) == 0 || args[0].kind != nString || args[0].str != "localities" {
		if len(args) == 0 {
			return Annotation{}, &ParseError{Offset: call.pos, Expected: `"localities" as first argument`, Found: "no argument"}
		}
		return Annotation{}, bad(args[0], `"localities" as first argument`)
	}
	var (
		a                 Annotation
		metas             = map[int]Tile{}
		count             = -1
		haveLoc, haveName bool
		locNode           node
		ndim              = -1
		firstMeta         node
		entryWant         = `["meta_<i>", ...], ["locality", <i>, <n>] or ["name", "<name>/<generation>"]`
		cyclic            *Cyclic
	)
	for _, e := range args[1:] {
		key, err := keyed(e, entryWant)
		if err != nil {
			return Annotation{}, err
		}
		switch {
		case strings.HasPrefix(key, "meta_"):
			i, err := strconv.Atoi(key[len("meta_"):])
			if err != nil || i < 0 || strconv.Itoa(i) != key[len("meta_"):] {
				return Annotation{}, bad(e.list[0], `"meta_<i>" with a non-negative index i`)
			}
			if _, dup := metas[i]; dup {
				return Annotation{}, bad(e.list[0], fmt.Sprintf("meta_%d only once", i))
			}
			tl, nd, err := tileEntry(e)
			if err != nil {
				return Annotation{}, err
			}
			if ndim < 0 {
				ndim, firstMeta = nd, e
			} else if nd != ndim {
				return Annotation{}, bad(e, fmt.Sprintf("a tile of %d dimension(s) like the one at offset %d", ndim, firstMeta.pos))
			}
			metas[i] = tl
		case key == "locality":
			if haveLoc {
				return Annotation{}, bad(e, "one locality entry")
			}
			if len(e.list) != 3 || e.list[1].kind != nInt || e.list[2].kind != nInt {
				return Annotation{}, bad(e, `["locality", <this locality>, <number of localities>]`)
			}
			haveLoc, locNode = true, e
			a.Locality, count = e.list[1].num, e.list[2].num
		case key == "blockcyclic":
			if cyclic != nil {
				return Annotation{}, bad(e, "one blockcyclic entry")
			}
			c, err := cyclicEntry(e)
			if err != nil {
				return Annotation{}, err
			}
			cyclic = &c
		case key == "name":
			if haveName {
				return Annotation{}, bad(e, "one name entry")
			}
			if len(e.list) != 2 || e.list[1].kind != nString {
				return Annotation{}, bad(e, `["name", "<name>/<generation>"]`)
			}
			haveName = true
			full := e.list[1].str
			slash := strings.LastIndexByte(full, '/')
			if slash < 0 {
				return Annotation{}, bad(e.list[1], `"<name>/<generation>"`)
			}
			g, err := strconv.Atoi(full[slash+1:])
			if err != nil || g < 0 || strconv.Itoa(g) != full[slash+1:] {
				return Annotation{}, bad(e.list[1], `"<name>/<generation>" with a non-negative decimal generation`)
			}
			a.Name, a.Generation = full[:slash], g
		default:
			return Annotation{}, bad(e.list[0], entryWant)
		}
	}
	end := &ParseError{Offset: call.pos, Found: "none"}
	if len(metas) == 0 {
		end.Expected = `a ["meta_0", ...] entry`
		return Annotation{}, end
	}
	if !haveLoc {
		end.Expected = `a ["locality", <i>, <n>] entry`
		return Annotation{}, end
	}
	if !haveName {
		end.Expected = `a ["name", "<name>/<generation>"] entry`
		return Annotation{}, end
	}
	if count != len(metas) {
		return Annotation{}, bad(locNode.list[2], fmt.Sprintf("the number of meta entries, %d", len(metas)))
	}
	a.Tiling.Tiles = make([]Tile, count)
	for i := range count {
		tl, ok := metas[i]
		if !ok {
			end.Expected = fmt.Sprintf(`a ["meta_%d", ...] entry (there are %d localities)`, i, count)
			return Annotation{}, end
		}
		a.Tiling.Tiles[i] = tl
	}
	a.Tiling.Shape = make([]int, ndim)
	for _, tl := range a.Tiling.Tiles {
		for d, s := range tl.Owned {
			a.Tiling.Shape[d] = max(a.Tiling.Shape[d], s.Stop)
		}
	}
	a.Tiling.Cyclic = cyclic
	if err := a.Validate(); err != nil {
		return Annotation{}, err
	}
	return a, nil
}

// tileEntry reads ["meta_i", ["tile", spans...] (, ["owned", spans...])].
func tileEntry(e node) (Tile, int, error) {
	if len(e.list) < 2 || len(e.list) > 3 {
		return Tile{}, 0, bad(e, `["meta_<i>", ["tile", <spans>]] with an optional ["owned", <spans>]`)
	}
	if k, err := keyed(e.list[1], `["tile", <spans>]`); err != nil || k != "tile" {
		return Tile{}, 0, bad(e.list[1], `["tile", <spans>]`)
	}
	held, err := spans(e.list[1])
	if err != nil {
		return Tile{}, 0, err
	}
	owned := held.Clone()
	if len(e.list) == 3 {
		if k, err := keyed(e.list[2], `["owned", <spans>]`); err != nil || k != "owned" {
			return Tile{}, 0, bad(e.list[2], `["owned", <spans>]`)
		}
		owned, err = spans(e.list[2])
		if err != nil {
			return Tile{}, 0, err
		}
		if len(owned) != len(held) {
			return Tile{}, 0, bad(e.list[2], fmt.Sprintf("owned spans of the tile's %d dimension(s)", len(held)))
		}
	}
	return Tile{Owned: owned, Halo: held}, len(held), nil
}

// spans reads ["tile"|"owned", ["pages", a, b], ["rows", a, b], ["columns", a, b]]
// with 1 to 3 dimensions named as DimName does.
func spans(n node) (Block, error) {
	const want = `["pages"|"rows"|"columns", <start>, <stop>]`
	got := map[string]Span{}
	for _, s := range n.list[1:] {
		if s.kind != nList || len(s.list) != 3 || s.list[0].kind != nString ||
			s.list[1].kind != nInt || s.list[2].kind != nInt {
			return nil, bad(s, want)
		}
		name := s.list[0].str
		if name != "pages" && name != "rows" && name != "columns" {
			return nil, bad(s.list[0], `"pages", "rows" or "columns"`)
		}
		if _, dup := got[name]; dup {
			return nil, bad(s.list[0], fmt.Sprintf("%q only once in a tile", name))
		}
		got[name] = Span{s.list[1].num, s.list[2].num}
	}
	_, hasP := got["pages"]
	_, hasR := got["rows"]
	_, hasC := got["columns"]
	switch {
	case hasP && hasR && hasC:
		return Block{got["pages"], got["rows"], got["columns"]}, nil
	case !hasP && hasR && hasC:
		return Block{got["rows"], got["columns"]}, nil
	case !hasP && !hasR && hasC:
		return Block{got["columns"]}, nil
	case !hasP && hasR && !hasC:
		return Block{got["rows"]}, nil // a 1-D vector named by rows, as Phylanx allows
	}
	return nil, bad(n, `spans for ["columns"], ["rows", "columns"] or ["pages", "rows", "columns"]`)
}
