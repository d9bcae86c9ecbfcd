package trace

import (
	"cmp"
	"fmt"
	"slices"
)

// CheckOTF2 checks an archive read back by ReadOTF2 for what the tracer
// promises and the readers rely on, and returns the problems found (none:
// the archive is sound), each naming the location, event or definition:
//
//   - events: each location's times do not go backwards and lie within
//     the clock properties' span (from the global offset for the trace
//     length); each Leave
//     matches the last region entered and not left on its location, and
//     every region entered is left;
//   - references: every region, metric, attribute (with its declared
//     type), location group, system tree node, metric member and string
//     that a definition or event names is defined; metric events carry one
//     value per member of their class, of the member's type;
//   - locations: every location has its events and a unique id;
//   - tasks: a "GUID" names one region; the pieces of one task do not
//     overlap in time; every "Parent GUID" is 0 or the GUID of a task of
//     the archive.
//
// Errors ReadOTF2 itself reports (a truncated file, a wrong magic number,
// a missing event file, times going backwards in a file) come before this.
func CheckOTF2(a *OTF2Archive) []string {
	c := &checker{a: a}
	c.definitions()
	c.events()
	c.tasks()
	return c.problems
}

type checker struct {
	a        *OTF2Archive
	problems []string
}

func (c *checker) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// str checks that string ref, the what of the object, is defined (or
// undefined, when that is allowed).
func (c *checker) str(object, what string, ref uint32, mayBeUndefined bool) {
	if ref == OTF2UndefinedU32 {
		if !mayBeUndefined {
			c.problem("%s: %s is undefined", object, what)
		}
		return
	}
	if _, ok := c.a.Strings[ref]; !ok {
		c.problem("%s: %s is string %d, which is not defined", object, what, ref)
	}
}

// sortedKeys are the keys of m in increasing order (so that problems come
// in a stable order).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (c *checker) definitions() {
	a := c.a
	for _, ref := range sortedKeys(a.Attributes) {
		at := a.Attributes[ref]
		obj := fmt.Sprintf("attribute %d", ref)
		c.str(obj, "name", at.Name, false)
		c.str(obj, "description", at.Description, true)
	}
	for _, ref := range sortedKeys(a.SystemTreeNodes) {
		n := a.SystemTreeNodes[ref]
		obj := fmt.Sprintf("system tree node %d", ref)
		c.str(obj, "name", n.Name, false)
		c.str(obj, "class", n.Class, false)
		if _, ok := a.SystemTreeNodes[n.Parent]; n.Parent != OTF2UndefinedU32 && !ok {
			c.problem("%s: parent node %d is not defined", obj, n.Parent)
		}
	}
	for _, ref := range sortedKeys(a.LocationGroups) {
		g := a.LocationGroups[ref]
		obj := fmt.Sprintf("location group %d", ref)
		c.str(obj, "name", g.Name, false)
		if _, ok := a.SystemTreeNodes[g.SystemTreeParent]; g.SystemTreeParent != OTF2UndefinedU32 && !ok {
			c.problem("%s: system tree parent %d is not defined", obj, g.SystemTreeParent)
		}
		if _, ok := a.LocationGroups[g.CreatingGroup]; g.CreatingGroup != OTF2UndefinedU32 && !ok {
			c.problem("%s: creating location group %d is not defined", obj, g.CreatingGroup)
		}
	}
	seen := map[uint64]bool{}
	for _, l := range a.Locations {
		obj := fmt.Sprintf("location %d", l.ID)
		if seen[l.ID] {
			c.problem("%s: defined twice", obj)
		}
		seen[l.ID] = true
		c.str(obj, "name", l.Name, false)
		if _, ok := a.LocationGroups[l.Group]; !ok {
			c.problem("%s: location group %d is not defined", obj, l.Group)
		}
		if _, ok := a.Events[l.ID]; !ok {
			c.problem("%s: no events read (no event file?)", obj)
		}
	}
	for _, ref := range sortedKeys(a.Regions) {
		r := a.Regions[ref]
		obj := fmt.Sprintf("region %d", ref)
		c.str(obj, "name", r.Name, false)
		c.str(obj, "canonical name", r.CanonicalName, true)
		c.str(obj, "description", r.Description, true)
		c.str(obj, "source file", r.SourceFile, true)
	}
	for _, ref := range sortedKeys(a.MetricMembers) {
		m := a.MetricMembers[ref]
		obj := fmt.Sprintf("metric member %d", ref)
		c.str(obj, "name", m.Name, false)
		c.str(obj, "description", m.Description, true)
		c.str(obj, "unit", m.Unit, true)
	}
	for _, ref := range sortedKeys(a.MetricClasses) {
		for _, m := range a.MetricClasses[ref].Members {
			if _, ok := a.MetricMembers[m]; !ok {
				c.problem("metric class %d: member %d is not defined", ref, m)
			}
		}
	}
}

// locations are the archive's locations, each once.
func (c *checker) locations() []OTF2LocationDef {
	seen := map[uint64]bool{}
	var ls []OTF2LocationDef
	for _, l := range c.a.Locations {
		if !seen[l.ID] {
			seen[l.ID] = true
			ls = append(ls, l)
		}
	}
	return ls
}

func (c *checker) events() {
	a := c.a
	for _, l := range c.locations() {
		var stack []uint32
		var last uint64
		if evs := a.Events[l.ID]; len(evs) > 0 {
			first, end := evs[0].Time, evs[len(evs)-1].Time
			if clk := a.Clock; first < clk.GlobalOffset || end-clk.GlobalOffset > clk.TraceLength {
				c.problem("location %d: events from %d to %d, outside the clock's span of %d from %d", l.ID, first, end, clk.TraceLength, clk.GlobalOffset)
			}
		}
		for i, ev := range a.Events[l.ID] {
			obj := fmt.Sprintf("location %d event %d", l.ID, i)
			if ev.Location != l.ID {
				c.problem("%s: belongs to location %d", obj, ev.Location)
			}
			if ev.Time < last {
				c.problem("%s: time %d is before the previous event's %d", obj, ev.Time, last)
			}
			last = max(last, ev.Time)
			for _, at := range ev.Attrs {
				def, ok := a.Attributes[at.Ref]
				switch {
				case !ok:
					c.problem("%s: attribute %d is not defined", obj, at.Ref)
				case def.Type != at.Type:
					c.problem("%s: attribute %q has type %v, defined as %v", obj, a.Strings[def.Name], at.Type, def.Type)
				}
			}
			switch ev.Kind {
			case OTF2Enter, OTF2Leave:
				if _, ok := a.Regions[ev.Region]; !ok {
					c.problem("%s: region %d is not defined", obj, ev.Region)
				}
				if ev.Kind == OTF2Enter {
					stack = append(stack, ev.Region)
					continue
				}
				if len(stack) == 0 {
					c.problem("%s: Leave of region %s with no region entered", obj, a.regionName(ev.Region))
					continue
				}
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top != ev.Region {
					c.problem("%s: Leave of region %s, but %s was entered last", obj, a.regionName(ev.Region), a.regionName(top))
				}
			case OTF2Metric:
				cl, ok := a.MetricClasses[ev.Metric]
				if !ok {
					c.problem("%s: metric class %d is not defined", obj, ev.Metric)
					continue
				}
				if len(ev.Values) != len(cl.Members) {
					c.problem("%s: %d values for metric class %d of %d members", obj, len(ev.Values), ev.Metric, len(cl.Members))
					continue
				}
				for j, v := range ev.Values {
					if m, ok := a.MetricMembers[cl.Members[j]]; ok && m.ValueType != v.Type {
						c.problem("%s: value %d has type %v, metric member %q is %v", obj, j, v.Type, a.Strings[m.Name], m.ValueType)
					}
				}
			}
		}
		for _, r := range slices.Backward(stack) {
			c.problem("location %d: region %s entered and never left", l.ID, a.regionName(r))
		}
	}
}

// tasks checks the GUIDs: one region per task, no overlapping pieces,
// known parents.
func (c *checker) tasks() {
	a := c.a
	guidRef, ok := a.attributeRef("GUID")
	if !ok {
		return
	}
	parentRef, hasParentAttr := a.attributeRef("Parent GUID")
	type run struct {
		loc        uint64
		event      int
		region     uint32
		start, end uint64
		left       bool
		parent     uint64
		hasParent  bool
	}
	runs := map[uint64][]*run{}
	for _, l := range c.locations() {
		var stack []*run // nil for regions entered without a GUID
		for i, ev := range a.Events[l.ID] {
			switch ev.Kind {
			case OTF2Enter:
				g, ok := attrValue(ev.Attrs, guidRef)
				if !ok {
					stack = append(stack, nil)
					continue
				}
				r := &run{loc: l.ID, event: i, region: ev.Region, start: ev.Time}
				if hasParentAttr {
					r.parent, r.hasParent = attrValue(ev.Attrs, parentRef)
				}
				runs[g] = append(runs[g], r)
				stack = append(stack, r)
			case OTF2Leave:
				if len(stack) == 0 {
					continue
				}
				r := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if r != nil && r.region == ev.Region {
					r.end, r.left = ev.Time, true
				}
			}
		}
	}
	for _, g := range sortedKeys(runs) {
		rs := runs[g]
		first := rs[0]
		for _, r := range rs[1:] {
			if r.region != first.region {
				c.problem("task %d: location %d event %d enters region %s, location %d event %d entered region %s",
					g, r.loc, r.event, a.regionName(r.region), first.loc, first.event, a.regionName(first.region))
			}
		}
		slices.SortStableFunc(rs, func(x, y *run) int { return cmp.Compare(x.start, y.start) })
		for i := 1; i < len(rs); i++ {
			if p := rs[i-1]; p.left && rs[i].start < p.end {
				c.problem("task %d: location %d event %d enters it while it runs on location %d since event %d",
					g, rs[i].loc, rs[i].event, p.loc, p.event)
			}
		}
		for _, r := range rs {
			if r.hasParent && r.parent != 0 && runs[r.parent] == nil {
				c.problem("task %d (location %d event %d): parent GUID %d is no task of the archive", g, r.loc, r.event, r.parent)
				break
			}
		}
	}
}
