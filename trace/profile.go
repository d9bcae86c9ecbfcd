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
// share of the available time, longest total first.
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
	fmt.Fprintln(tw, "region\tcount\ttotal\tmean\tmin\tmax\t% wall\t")
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
	ns := func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }
	for _, n := range p.sorted() {
		s := p.Regions[n]
		if err := cw.Write([]string{locality, n, strconv.FormatUint(s.Count, 10), ns(s.Total), ns(s.Mean()), ns(s.Min), ns(s.Max),
			strconv.FormatFloat(p.Share(s.Total), 'g', 6, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
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
// the locality, Busy the time they spent inside at least one region.
// An archive whose Enter and Leave events do not match is an error naming
// the location and the event.
func ProfileFromOTF2(a *OTF2Archive) (perLocality map[uint32]*Profile, combined *Profile, err error) {
	res := ticks(a.Clock.TimerResolution)
	guidRef, hasGUID := a.attributeRef("GUID")
	wall := res.duration(a.Clock.TraceLength)
	if a.Clock.TraceLength == 0 {
		first, last, ok := a.span()
		if ok {
			wall = res.duration(last - first)
		}
	}
	type task struct {
		region string
		total  time.Duration
	}
	type open struct {
		region uint32
		enter  uint64
		guid   uint64
		hasID  bool
	}
	perLocality = map[uint32]*Profile{}
	tasks := map[uint32]map[uint64]*task{} // by locality, by GUID
	var anon []struct {
		loc uint32
		t   task
	}
	for _, l := range a.Locations {
		loc := uint32(l.ID >> 32)
		p := perLocality[loc]
		if p == nil {
			p = NewProfile()
			p.Wall = wall
			perLocality[loc] = p
			tasks[loc] = map[uint64]*task{}
		}
		p.Lanes++
		var stack []open
		for i, ev := range a.Events[l.ID] {
			switch ev.Kind {
			case OTF2Enter:
				o := open{region: ev.Region, enter: ev.Time}
				if hasGUID {
					o.guid, o.hasID = attrValue(ev.Attrs, guidRef)
				}
				stack = append(stack, o)
			case OTF2Leave:
				if len(stack) == 0 {
					return nil, nil, fmt.Errorf("profile: location %d event %d: Leave of region %s with no region entered", l.ID, i, a.regionName(ev.Region))
				}
				o := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if o.region != ev.Region {
					return nil, nil, fmt.Errorf("profile: location %d event %d: Leave of region %s, but %s was entered last", l.ID, i, a.regionName(ev.Region), a.regionName(o.region))
				}
				d := res.duration(ev.Time - o.enter)
				if len(stack) == 0 {
					p.Busy += d
				}
				name := a.regionText(o.region)
				if !o.hasID {
					anon = append(anon, struct {
						loc uint32
						t   task
					}{loc, task{name, d}})
					continue
				}
				t := tasks[loc][o.guid]
				if t == nil {
					t = &task{region: name}
					tasks[loc][o.guid] = t
				}
				t.total += d
			}
		}
		if len(stack) > 0 {
			o := stack[len(stack)-1]
			return nil, nil, fmt.Errorf("profile: location %d: region %s entered at %d and never left", l.ID, a.regionName(o.region), o.enter)
		}
	}
	for loc, ts := range tasks {
		for _, t := range ts {
			perLocality[loc].Add(t.region, t.total)
		}
	}
	for _, x := range anon {
		perLocality[x.loc].Add(x.t.region, x.t.total)
	}
	combined = NewProfile()
	combined.Wall = wall
	for _, p := range perLocality {
		combined.Merge(p)
	}
	return perLocality, combined, nil
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
