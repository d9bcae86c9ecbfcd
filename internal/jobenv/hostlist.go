package jobenv

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlistHosts is the largest number of host names ExpandHostlist will
// produce. Larger lists are rejected before anything is allocated.
const MaxHostlistHosts = 1 << 20

// HostlistError reports a malformed or oversized slurm hostlist.
type HostlistError struct {
	Input string // the complete hostlist given to ExpandHostlist
	Pos   int    // byte offset into Input where the problem was found
	Msg   string // what is wrong
}

func (e *HostlistError) Error() string {
	return fmt.Sprintf("invalid hostlist %q at position %d: %s", e.Input, e.Pos, e.Msg)
}

// ExpandHostlist expands a slurm hostlist expression (as found in
// SLURM_JOB_NODELIST or printed by squeue) into individual host names, in
// the order `scontrol show hostnames` prints them.
//
// The syntax is a comma-separated list of items; commas inside brackets do
// not separate items. Each item is a host name that may contain bracket
// groups of comma-separated numbers and inclusive ranges, for example
// "node[01-04,07]" or "rack[1-2]-node[1-2]". As in slurm, the width of a
// range's first number sets the zero padding of every number it produces
// ("n[001-3]" gives n001 n002 n003, "n[8-11]" gives n8 ... n11). Several
// bracket groups in one item expand to their cartesian product in slurm's
// order (see hostItem.expand): "rack[1-2]-node[1-2]" gives rack1-node1,
// rack1-node2, rack2-node1, rack2-node2. Duplicates are kept.
//
// Unlike slurm 22.05, which rejects them, text after the last bracket
// group is allowed ("n[1-2]-ib" gives n1-ib, n2-ib). Stricter than slurm,
// empty items ("a,,b"), "n[1-]" and unbalanced brackets are errors.
//
// Errors (*HostlistError) name the input and the byte position of the
// problem: empty input or item, unbalanced or nested brackets, empty or
// non-numeric range, descending range, whitespace, and more than
// MaxHostlistHosts names in total.
func ExpandHostlist(s string) ([]string, error) {
	if s == "" {
		return nil, &HostlistError{Input: s, Pos: 0, Msg: "empty hostlist"}
	}
	items, err := parseHostlist(s)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, it := range items {
		total += it.count // each count <= MaxHostlistHosts, so no overflow
		if total > MaxHostlistHosts {
			return nil, &HostlistError{Input: s, Pos: it.pos,
				Msg: fmt.Sprintf("expands to more than %d hosts", MaxHostlistHosts)}
		}
	}
	out := make([]string, 0, total)
	for i := range items {
		out = items[i].expand(out)
	}
	return out, nil
}

// hostRange is one "lo" or "lo-hi" element of a bracket group.
type hostRange struct {
	lo, hi uint64
	width  int
}

// hostSegment is either literal text (ranges == nil) or a bracket group.
type hostSegment struct {
	text   string
	ranges []hostRange
}

type hostItem struct {
	pos   int // byte offset of the item in the input
	segs  []hostSegment
	count int // number of names, at most MaxHostlistHosts+1 (saturated)
}

// parseHostlist splits s into items at top-level commas and parses each.
func parseHostlist(s string) ([]hostItem, error) {
	var items []hostItem
	depth, open, start := 0, -1, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch c := s[i]; c {
			case '[':
				if depth > 0 {
					return nil, &HostlistError{Input: s, Pos: i, Msg: "nested '['"}
				}
				depth, open = 1, i
				continue
			case ']':
				if depth == 0 {
					return nil, &HostlistError{Input: s, Pos: i, Msg: "unbalanced ']' without matching '['"}
				}
				depth = 0
				continue
			case ',':
				if depth > 0 {
					continue
				}
			case ' ', '\t', '\n', '\r', '\v', '\f':
				return nil, &HostlistError{Input: s, Pos: i, Msg: "whitespace in hostlist"}
			default:
				continue
			}
		} else if depth > 0 {
			return nil, &HostlistError{Input: s, Pos: open, Msg: "unbalanced '[' without matching ']'"}
		}
		// s[i] is a top-level comma or i == len(s): s[start:i] is an item.
		if i == start {
			return nil, &HostlistError{Input: s, Pos: i, Msg: "empty host name"}
		}
		it, err := parseHostItem(s, start, i)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		start = i + 1
	}
	return items, nil
}

// parseHostItem parses s[start:end], which has balanced, non-nested
// brackets and no top-level commas.
func parseHostItem(s string, start, end int) (hostItem, error) {
	it := hostItem{pos: start, count: 1}
	i := start
	for i < end {
		j := strings.IndexByte(s[i:end], '[')
		if j < 0 {
			it.segs = append(it.segs, hostSegment{text: s[i:end]})
			break
		}
		if j > 0 {
			it.segs = append(it.segs, hostSegment{text: s[i : i+j]})
		}
		open := i + j
		closeAt := open + strings.IndexByte(s[open:end], ']')
		ranges, n, err := parseBracket(s, open+1, closeAt)
		if err != nil {
			return it, err
		}
		it.segs = append(it.segs, hostSegment{ranges: ranges})
		it.count = hostlistSatMul(it.count, n)
		if it.count > MaxHostlistHosts {
			return it, &HostlistError{Input: s, Pos: open,
				Msg: fmt.Sprintf("expands to more than %d hosts", MaxHostlistHosts)}
		}
		i = closeAt + 1
	}
	return it, nil
}

// parseBracket parses the inside of a bracket group, s[start:end], and
// returns its ranges and how many numbers they produce (saturated at
// MaxHostlistHosts+1).
func parseBracket(s string, start, end int) ([]hostRange, int, error) {
	if start == end {
		return nil, 0, &HostlistError{Input: s, Pos: start - 1, Msg: "empty brackets"}
	}
	var ranges []hostRange
	count := 0
	for p := start; p <= end; {
		q := p + strings.IndexByte(s[p:end], ',')
		if q < p {
			q = end
		}
		if q == p {
			return nil, 0, &HostlistError{Input: s, Pos: p, Msg: "empty range in brackets"}
		}
		r, err := parseRange(s, p, q)
		if err != nil {
			return nil, 0, err
		}
		ranges = append(ranges, r)
		n := MaxHostlistHosts + 1
		if r.hi-r.lo < MaxHostlistHosts {
			n = int(r.hi-r.lo) + 1
		}
		count = min(count+n, MaxHostlistHosts+1)
		if q == end {
			break
		}
		p = q + 1
		if p == end {
			return nil, 0, &HostlistError{Input: s, Pos: q, Msg: "trailing ',' in brackets"}
		}
	}
	return ranges, count, nil
}

// parseRange parses "lo" or "lo-hi" in s[start:end].
func parseRange(s string, start, end int) (hostRange, error) {
	tok := s[start:end]
	loTok, hiTok, isRange := strings.Cut(tok, "-")
	lo, err := parseRangeNumber(s, start, loTok)
	if err != nil {
		return hostRange{}, err
	}
	r := hostRange{lo: lo, hi: lo, width: len(loTok)}
	if !isRange {
		return r, nil
	}
	hiPos := start + len(loTok) + 1
	if r.hi, err = parseRangeNumber(s, hiPos, hiTok); err != nil {
		return hostRange{}, err
	}
	if r.hi < r.lo {
		return hostRange{}, &HostlistError{Input: s, Pos: start,
			Msg: fmt.Sprintf("descending range %q", tok)}
	}
	return r, nil
}

func parseRangeNumber(s string, pos int, tok string) (uint64, error) {
	if tok == "" {
		return 0, &HostlistError{Input: s, Pos: pos, Msg: "missing number in range"}
	}
	for k := 0; k < len(tok); k++ {
		if tok[k] < '0' || tok[k] > '9' {
			return 0, &HostlistError{Input: s, Pos: pos + k,
				Msg: fmt.Sprintf("non-numeric range %q", tok)}
		}
	}
	v, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return 0, &HostlistError{Input: s, Pos: pos, Msg: fmt.Sprintf("number %q out of range", tok)}
	}
	return v, nil
}

// hostlistSatMul multiplies two non-negative counts, saturating at
// MaxHostlistHosts+1.
func hostlistSatMul(a, b int) int {
	const limit = MaxHostlistHosts + 1
	if a == 0 || b == 0 {
		return 0
	}
	if a > limit/b {
		return limit
	}
	return min(a*b, limit)
}

// expand appends the names of it to out.
//
// The loop nesting follows slurm's hostlist.c, which peels bracket groups
// off from the right: with groups G1..Gk the last group Gk varies fastest,
// then G1, G2, ..., G(k-1), which varies slowest. For two groups this is
// the ordinary cartesian order (rack[1-2]-node[1-2] gives rack1-node1,
// rack1-node2, rack2-node1, rack2-node2); for x[1-2]y[3-4]z[5-6] it gives
// x1y3z5 x1y3z6 x2y3z5 x2y3z6 x1y4z5 ...
func (it *hostItem) expand(out []string) []string {
	var groups []int // indexes of bracket segments, slowest-varying first
	for k := len(it.segs) - 1; k >= 0; k-- {
		if it.segs[k].ranges != nil {
			groups = append(groups, k)
		}
	}
	if len(groups) > 1 {
		last := groups[0]
		copy(groups, groups[1:])
		groups[len(groups)-1] = last
	}
	e := hostExpander{item: it, order: groups, val: make([]hostValue, len(it.segs))}
	e.out = out
	e.run(0)
	return e.out
}

type hostValue struct {
	v     uint64
	width int
}

type hostExpander struct {
	item  *hostItem
	order []int       // segment indexes, outermost loop first
	val   []hostValue // current number of each bracket segment
	buf   []byte
	out   []string
}

func (e *hostExpander) run(d int) {
	if d == len(e.order) {
		e.buf = e.buf[:0]
		for k, seg := range e.item.segs {
			if seg.ranges == nil {
				e.buf = append(e.buf, seg.text...)
				continue
			}
			for pad := e.val[k].width - hostlistDecimalLen(e.val[k].v); pad > 0; pad-- {
				e.buf = append(e.buf, '0')
			}
			e.buf = strconv.AppendUint(e.buf, e.val[k].v, 10)
		}
		e.out = append(e.out, string(e.buf))
		return
	}
	k := e.order[d]
	for _, r := range e.item.segs[k].ranges {
		for v := r.lo; ; v++ {
			e.val[k] = hostValue{v: v, width: r.width}
			e.run(d + 1)
			if v == r.hi {
				break
			}
		}
	}
}

func hostlistDecimalLen(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// tasksOnNode returns the number of tasks slurm places on node number node
// (SLURM_NODEID) from a tasks-per-node list such as SLURM_TASKS_PER_NODE:
// counts in node order, each optionally repeated, "2(x3),1" being 2, 2, 2
// and 1.
func tasksOnNode(spec string, node int) (int, error) {
	left := node
	if node < 0 {
		return 0, fmt.Errorf("tasks per node %q: node %d", spec, node)
	}
	for _, item := range strings.Split(spec, ",") {
		count, times := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			rep, ok := strings.CutPrefix(item[i:], "(x")
			if !ok || !strings.HasSuffix(rep, ")") {
				return 0, fmt.Errorf("tasks per node %q: %q is not N or N(xM)", spec, item)
			}
			count, times = item[:i], strings.TrimSuffix(rep, ")")
		}
		n, err1 := strconv.Atoi(count)
		m, err2 := strconv.Atoi(times)
		if err1 != nil || err2 != nil || n < 0 || m < 1 {
			return 0, fmt.Errorf("tasks per node %q: %q is not N or N(xM)", spec, item)
		}
		if left < m {
			return n, nil
		}
		left -= m
	}
	return 0, fmt.Errorf("tasks per node %q: no entry for node %d", spec, node)
}
