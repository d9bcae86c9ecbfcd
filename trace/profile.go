package trace

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// RegionStats is what a profile knows of one region (a task name): how
// many tasks ran it and their inclusive times. The mean is Total/Count.
type RegionStats struct {
	Count           uint64
	Total, Min, Max time.Duration
}

// Mean is the mean time of one task of the region (0 when Count is 0).
func (s *RegionStats) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// Profile is an APEX-style flat profile of a run (one locality's or the
// combined one).
//
// A task's time is its inclusive time: from each Enter of its region to the
// matching Leave on a lane, summed over the pieces of a task that yielded
// and resumed (the task counts once, with the sum), and including the time
// of any region entered inside it. Count is the number of tasks, Min and
// Max are over those per-task sums.
//
// The share of wall time of a region is Total / (Wall × Lanes): the part
// of the CPU time the run had on its worker lanes (APEX's "available CPU
// time") that went to the region. Lanes 0 counts as 1. Since times are
// inclusive, nested regions make the shares add up to more than the busy
// part; Busy, when known, is the time lanes spent inside at least one
// region, and Busy / (Wall × Lanes) is the utilisation.
type Profile struct {
	Wall    time.Duration
	Lanes   int
	Busy    time.Duration
	Regions map[string]*RegionStats
}

// NewProfile returns an empty profile.
func NewProfile() *Profile {
	return &Profile{Regions: map[string]*RegionStats{}}
}

// Add counts one task of region that took d (its inclusive time, all
// pieces summed).
func (p *Profile) Add(region string, d time.Duration) {
	s := p.Regions[region]
	if s == nil {
		s = &RegionStats{Min: d, Max: d}
		if p.Regions == nil {
			p.Regions = map[string]*RegionStats{}
		}
		p.Regions[region] = s
	}
	s.Count++
	s.Total += d
	s.Min = min(s.Min, d)
	s.Max = max(s.Max, d)
}

// Merge adds q's tasks to p. The lanes and busy times add up (q ran on
// other lanes), the wall time becomes the longer of the two.
func (p *Profile) Merge(q *Profile) {
	p.Wall = max(p.Wall, q.Wall)
	p.Lanes += q.Lanes
	p.Busy += q.Busy
	for name, qs := range q.Regions {
		if qs.Count == 0 {
			continue
		}
		s := p.Regions[name]
		if s == nil {
			s = &RegionStats{Min: qs.Min, Max: qs.Max}
			if p.Regions == nil {
				p.Regions = map[string]*RegionStats{}
			}
			p.Regions[name] = s
		}
		s.Count += qs.Count
		s.Total += qs.Total
		s.Min = min(s.Min, qs.Min)
		s.Max = max(s.Max, qs.Max)
	}
}

// available is Wall × Lanes, the CPU time shares are taken of.
func (p *Profile) available() time.Duration {
	return p.Wall * time.Duration(max(p.Lanes, 1))
}

// Share is the part of the available time (Wall × Lanes) that d is, 0 when
// the wall time is 0.
func (p *Profile) Share(d time.Duration) float64 {
	a := p.available()
	if a <= 0 {
		return 0
	}
	return float64(d) / float64(a)
}

// sorted returns the region names by total time, longest first (ties by
// name).
func (p *Profile) sorted() []string {
	names := make([]string, 0, len(p.Regions))
	for n, s := range p.Regions {
		if s.Count > 0 {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(p.Regions[b].Total, p.Regions[a].Total); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return names
}

// WriteText writes the profile for the screen: a title line, the wall
// time, lanes, available time (and utilisation when Busy is known), then
// one line per region with its count, total, mean, min and max time and
// share of the available time (column "% avail": percent of wall × lanes),
// longest total first.
func (p *Profile) WriteText(w io.Writer, title string) error {
	lanes := max(p.Lanes, 1)
	head := fmt.Sprintf("%s\nwall time %v, %d lane(s), available time %v", title, p.Wall, lanes, p.available())
	if p.Busy > 0 {
		head += fmt.Sprintf(", busy %v (%.1f%% utilisation)", p.Busy, 100*p.Share(p.Busy))
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "region\tcount\ttotal\tmean\tmin\tmax\t% avail\t")
	for _, n := range p.sorted() {
		s := p.Regions[n]
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%v\t%.2f\t\n", n, s.Count, s.Total, s.Mean(), s.Min, s.Max, 100*p.Share(s.Total))
	}
	return tw.Flush()
}

// profileCSVHeader is the header line WriteCSV writes.
var profileCSVHeader = []string{"locality", "region", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "share"}

// WriteCSV writes a header line and one row per region (longest total
// first): locality (as given; "all" for a combined profile), region, count,
// total, mean, min and max in nanoseconds and the share of the available
// time as a fraction.
func (p *Profile) WriteCSV(w io.Writer, locality string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(profileCSVHeader); err != nil {
		return err
	}
	if err := p.csvRows(cw, locality); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// csvRows writes the rows of WriteCSV.
func (p *Profile) csvRows(cw *csv.Writer, locality string) error {
	ns := func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }
	for _, n := range p.sorted() {
		s := p.Regions[n]
		if err := cw.Write([]string{locality, n, strconv.FormatUint(s.Count, 10), ns(s.Total), ns(s.Mean()), ns(s.Min), ns(s.Max),
			strconv.FormatFloat(p.Share(s.Total), 'g', 6, 64)}); err != nil {
			return err
		}
	}
	return nil
}

// ticks converts between an archive's timer ticks and durations.
type ticks uint64 // timer resolution, ticks per second

func (r ticks) duration(t uint64) time.Duration {
	if r == 0 || r == 1e9 {
		return time.Duration(t)
	}
	hi, lo := bits.Mul64(t, 1e9)
	if hi >= uint64(r) {
		return time.Duration(1<<63 - 1)
	}
	q, _ := bits.Div64(hi, lo, uint64(r))
	return time.Duration(min(q, 1<<63-1))
}

// ProfileFromOTF2 computes the profile of each locality (location id >> 32)
// and the combined profile of an archive, counting times as Profile says.
// A task is the run of Enter/Leave pieces that carry the same "GUID"
// attribute on one locality; Enter events without a GUID each start a task
// of their own. Wall is the archive's trace length (the span of its events
// when the clock properties give none), Lanes the number of locations of
// the locality that run tasks (a location holding Metric events and no
// Enter is a sampler's, not a lane), Busy the time they spent inside at
// least one region.
// An archive whose Enter and Leave events do not match is an error naming
// the location and the event.
func ProfileFromOTF2(a *OTF2Archive) (perLocality map[uint32]*Profile, combined *Profile, err error) {
	res := ticks(a.Clock.TimerResolution)
	wall := res.duration(a.Clock.TraceLength)
	if a.Clock.TraceLength == 0 {
		if first, last, ok := a.span(); ok {
			wall = res.duration(last - first)
		}
	}
	pieces, err := a.pieces()
	if err != nil {
		return nil, nil, fmt.Errorf("profile: %w", err)
	}
	perLocality = map[uint32]*Profile{}
	for _, l := range a.Locations {
		loc := uint32(l.ID >> 32)
		p := perLocality[loc]
		if p == nil {
			p = NewProfile()
			p.Wall = wall
			perLocality[loc] = p
		}
		if !a.samplerOnly(l.ID) {
			p.Lanes++
		}
	}
	type key struct {
		loc  uint32
		guid uint64
	}
	type task struct {
		region string
		total  time.Duration
	}
	tasks := map[key]*task{}
	var order []key // tasks with a GUID, in the order they first ran
	for _, pc := range pieces {
		loc := uint32(pc.loc >> 32)
		d := res.duration(pc.end - pc.start)
		if pc.depth == 0 {
			perLocality[loc].Busy += d
		}
		if !pc.hasGUID {
			perLocality[loc].Add(a.regionText(pc.region), d)
			continue
		}
		k := key{loc, pc.guid}
		t := tasks[k]
		if t == nil {
			t = &task{region: a.regionText(pc.region)}
			tasks[k] = t
			order = append(order, k)
		}
		t.total += d
	}
	for _, k := range order {
		perLocality[k.loc].Add(tasks[k].region, tasks[k].total)
	}
	combined = NewProfile()
	combined.Wall = wall
	for _, p := range perLocality {
		combined.Merge(p)
	}
	return perLocality, combined, nil
}

// samplerOnly tells whether location loc holds Metric events and no Enter:
// a sampler's location rather than a worker lane.
func (a *OTF2Archive) samplerOnly(loc uint64) bool {
	metric := false
	for _, ev := range a.Events[loc] {
		switch ev.Kind {
		case OTF2Enter:
			return false
		case OTF2Metric:
			metric = true
		}
	}
	return metric
}

// piece is one run of a region on a location: from an Enter to the
// matching Leave.
type piece struct {
	loc          uint64
	region       uint32
	start, end   uint64 // ticks
	depth        int    // regions open around it on its location
	guid, parent uint64 // the Enter event's "GUID" and "Parent GUID"
	hasGUID      bool
	hasParent    bool
}

// pieces matches the Enter and Leave events of every location (in
// location order, each location's pieces in the order they end). Leave
// events that do not match and regions never left are errors naming the
// location and the event.
func (a *OTF2Archive) pieces() ([]piece, error) {
	guidRef, hasGUIDAttr := a.attributeRef("GUID")
	parentRef, hasParentAttr := a.attributeRef("Parent GUID")
	var out []piece
	for _, l := range a.Locations {
		var stack []piece
		for i, ev := range a.Events[l.ID] {
			switch ev.Kind {
			case OTF2Enter:
				pc := piece{loc: l.ID, region: ev.Region, start: ev.Time, depth: len(stack)}
				if hasGUIDAttr {
					pc.guid, pc.hasGUID = attrValue(ev.Attrs, guidRef)
				}
				if hasParentAttr {
					pc.parent, pc.hasParent = attrValue(ev.Attrs, parentRef)
				}
				stack = append(stack, pc)
			case OTF2Leave:
				if len(stack) == 0 {
					return nil, fmt.Errorf("location %d event %d: Leave of region %s with no region entered", l.ID, i, a.regionName(ev.Region))
				}
				pc := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if pc.region != ev.Region {
					return nil, fmt.Errorf("location %d event %d: Leave of region %s, but %s was entered last", l.ID, i, a.regionName(ev.Region), a.regionName(pc.region))
				}
				pc.end = max(ev.Time, pc.start)
				out = append(out, pc)
			}
		}
		if len(stack) > 0 {
			pc := stack[len(stack)-1]
			return nil, fmt.Errorf("location %d: region %s entered at %d and never left", l.ID, a.regionName(pc.region), pc.start)
		}
	}
	return out, nil
}

// attributeRef is the reference of the attribute named name.
func (a *OTF2Archive) attributeRef(name string) (uint32, bool) {
	best, found := uint32(0), false
	for ref, at := range a.Attributes {
		if a.Strings[at.Name] == name && (!found || ref < best) {
			best, found = ref, true
		}
	}
	return best, found
}

// attrValue is the value of attribute ref in attrs.
func attrValue(attrs []OTF2Attr, ref uint32) (uint64, bool) {
	for _, at := range attrs {
		if at.Ref == ref {
			return at.Value, true
		}
	}
	return 0, false
}

// regionName is the quoted name of a region, or its reference when it is
// not defined.
func (a *OTF2Archive) regionName(ref uint32) string {
	r, ok := a.Regions[ref]
	if !ok {
		return fmt.Sprintf("<%d> (undefined)", ref)
	}
	if s, ok := a.Strings[r.Name]; ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("<%d>", ref)
}

// regionText is the name of a region, or "<ref>" when it or its name is
// not defined.
func (a *OTF2Archive) regionText(ref uint32) string {
	if r, ok := a.Regions[ref]; ok {
		if s, ok := a.Strings[r.Name]; ok {
			return s
		}
	}
	return fmt.Sprintf("<%d>", ref)
}

// span is the time of the first and last event of the archive.
func (a *OTF2Archive) span() (first, last uint64, ok bool) {
	for _, evs := range a.Events {
		if len(evs) == 0 {
			continue
		}
		f, l := evs[0].Time, evs[len(evs)-1].Time
		if !ok {
			first, last, ok = f, l, true
			continue
		}
		first, last = min(first, f), max(last, l)
	}
	return first, last, ok
}
