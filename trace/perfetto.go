package trace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// perfettoEvent is one entry of the Chrome trace-event format's
// traceEvents array.
type perfettoEvent struct {
	Name string         `json:"name,omitempty"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   json.Number    `json:"ts,omitempty"`
	Dur  json.Number    `json:"dur,omitempty"`
	Pid  uint32         `json:"pid"`
	Tid  uint32         `json:"tid"`
	ID   uint64         `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Flow names in the Perfetto export.
const (
	perfettoSpawnFlow  = "spawn"  // parent task → child task
	perfettoResumeFlow = "resume" // piece of a yielded task → its next piece
)

// WritePerfetto writes the archive as Chrome trace-event JSON (the object
// form, {"traceEvents": [...]}) that the Perfetto UI and chrome://tracing
// load:
//
//   - a process per locality (pid = location id >> 32) and a thread per
//     lane (tid = location id & 0xffffffff), named by "process_name" and
//     "thread_name" metadata events from the location group and location
//     names;
//   - a complete event ("X") per piece of a region (Enter to matching
//     Leave), category "task", with the GUID and parent GUID as arguments
//     (numbers, or decimal strings from 2^53 on, which JavaScript would
//     round);
//   - flow events ("s" then "f", binding to the enclosing slice) named
//     "spawn" from the parent task to the first piece of each child task
//     whose "Parent GUID" is a task of the archive, on whatever locality
//     the parent ran, and named "resume" from each piece of a task that
//     yielded to its next piece. Flow ids are numbered from 1; the GUIDs
//     are in the arguments. A flow starts inside the parent's latest piece
//     that began no later than the child, at the child's start when the
//     parent is still running then. A flow that would go back in time (a
//     child that starts before any piece of its parent, as clock offsets
//     between localities can make it look) is left out, since consumers
//     drop it; otherData.flows_left_out counts them;
//   - a counter event ("C", args {"value": v}) per value of each Metric
//     event, named after the metric member, on the locality's process
//     (without the suffix " (locality N)" of the process's own locality
//     that a Tessera archive's metrics carry for Traveler, and suffixed
//     with the lane when the locality samples that member on more than one
//     lane). NaN and infinite values are left out.
//
// Times are microseconds (with nanosecond decimals) since the start of the
// trace. Mismatched Enter and Leave events are an error, as in
// ProfileFromOTF2.
func WritePerfetto(w io.Writer, a *OTF2Archive) error {
	pieces, err := a.pieces()
	if err != nil {
		return fmt.Errorf("perfetto: %w", err)
	}
	res := ticks(a.Clock.TimerResolution)
	base := a.Clock.GlobalOffset
	if first, _, ok := a.span(); ok {
		base = min(base, first)
	}
	ts := func(t uint64) json.Number { return perfettoMicros(res.duration(t - min(t, base))) }
	pid := func(loc uint64) uint32 { return uint32(loc >> 32) }
	tid := func(loc uint64) uint32 { return uint32(loc) }

	bw := bufio.NewWriter(w)
	first := true
	var werr error
	emit := func(e perfettoEvent) {
		if werr != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			werr = fmt.Errorf("perfetto: event %+v: %w", e, err)
			return
		}
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		bw.Write(b)
	}
	bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[` + "\n")

	// Names: a process per locality, a thread per lane.
	named := map[uint32]bool{}
	for _, l := range a.Locations {
		p := pid(l.ID)
		if !named[p] {
			named[p] = true
			name := fmt.Sprintf("locality %d", p)
			if g, ok := a.LocationGroups[l.Group]; ok && a.Strings[g.Name] != "" {
				name = a.Strings[g.Name]
			}
			emit(perfettoEvent{Name: "process_name", Ph: "M", Pid: p, Args: map[string]any{"name": name}})
			emit(perfettoEvent{Name: "process_sort_index", Ph: "M", Pid: p, Args: map[string]any{"sort_index": p}})
		}
		name := a.Strings[l.Name]
		if name == "" {
			name = fmt.Sprintf("lane %d", tid(l.ID))
		}
		emit(perfettoEvent{Name: "thread_name", Ph: "M", Pid: p, Tid: tid(l.ID), Args: map[string]any{"name": name}})
		emit(perfettoEvent{Name: "thread_sort_index", Ph: "M", Pid: p, Tid: tid(l.ID), Args: map[string]any{"sort_index": tid(l.ID)}})
	}

	// Slices, by location, then by start time, enclosing before enclosed
	// (importers take a slice that starts with its parent as nested in it
	// only when it comes after).
	order := map[uint64]int{}
	for i, l := range a.Locations {
		if _, ok := order[l.ID]; !ok {
			order[l.ID] = i
		}
	}
	slices.SortStableFunc(pieces, func(x, y piece) int {
		return cmp.Or(cmp.Compare(order[x.loc], order[y.loc]), cmp.Compare(x.start, y.start), cmp.Compare(x.depth, y.depth))
	})
	byTask := map[uint64][]piece{} // the pieces of each task, by GUID
	for _, pc := range pieces {
		args := map[string]any{}
		if pc.hasGUID {
			args["guid"] = perfettoGUID(pc.guid)
			byTask[pc.guid] = append(byTask[pc.guid], pc)
		}
		if pc.hasParent {
			args["parent_guid"] = perfettoGUID(pc.parent)
		}
		if len(args) == 0 {
			args = nil
		}
		emit(perfettoEvent{Name: a.regionText(pc.region), Cat: "task", Ph: "X", Ts: ts(pc.start),
			Dur: perfettoMicros(res.duration(pc.end - pc.start)), Pid: pid(pc.loc), Tid: tid(pc.loc), Args: args})
	}

	// Flows: parent → child, and piece → next piece of a task.
	guids := make([]uint64, 0, len(byTask))
	for g, ps := range byTask {
		slices.SortStableFunc(ps, func(x, y piece) int { return cmp.Compare(x.start, y.start) })
		guids = append(guids, g)
	}
	slices.Sort(guids)
	var id, backward uint64
	flow := func(name string, from piece, at uint64, to piece, args map[string]any) {
		// The start must lie inside from, the end at the start of to.
		if at >= from.end && from.end > from.start {
			at = from.end - 1
		}
		at = max(at, from.start)
		if at > to.start {
			backward++
			return
		}
		id++
		emit(perfettoEvent{Name: name, Cat: "flow", Ph: "s", Ts: ts(at), Pid: pid(from.loc), Tid: tid(from.loc), ID: id, Bp: "e", Args: args})
		emit(perfettoEvent{Name: name, Cat: "flow", Ph: "f", Ts: ts(to.start), Pid: pid(to.loc), Tid: tid(to.loc), ID: id, Bp: "e", Args: args})
	}
	for _, g := range guids {
		ps := byTask[g]
		child := ps[0]
		if parent := byTask[child.parent]; child.hasParent && child.parent != g && len(parent) > 0 {
			from := parent[0]
			for _, p := range parent {
				if p.start <= child.start {
					from = p
				}
			}
			flow(perfettoSpawnFlow, from, child.start, child, map[string]any{"parent_guid": perfettoGUID(child.parent), "guid": perfettoGUID(g)})
		}
		for i := 1; i < len(ps); i++ {
			flow(perfettoResumeFlow, ps[i-1], ps[i-1].end, ps[i], map[string]any{"guid": perfettoGUID(g)})
		}
	}

	// Counters.
	type member struct {
		loc uint32
		ref uint32
	}
	lanesOf := map[member]map[uint64]bool{}
	for _, l := range a.Locations {
		for _, ev := range a.Events[l.ID] {
			if ev.Kind != OTF2Metric {
				continue
			}
			for i := range ev.Values {
				if m, ok := a.metricMember(ev.Metric, i); ok {
					k := member{pid(l.ID), m}
					if lanesOf[k] == nil {
						lanesOf[k] = map[uint64]bool{}
					}
					lanesOf[k][l.ID] = true
				}
			}
		}
	}
	for _, l := range a.Locations {
		for _, ev := range a.Events[l.ID] {
			if ev.Kind != OTF2Metric {
				continue
			}
			for i, v := range ev.Values {
				x, ok := metricFloat(v)
				if !ok {
					continue
				}
				name := fmt.Sprintf("metric %d value %d", ev.Metric, i)
				if m, ok := a.metricMember(ev.Metric, i); ok {
					name = strings.TrimSuffix(a.Strings[a.MetricMembers[m].Name], fmt.Sprintf(" (locality %d)", pid(l.ID)))
					if len(lanesOf[member{pid(l.ID), m}]) > 1 {
						name += fmt.Sprintf(" (lane %d)", tid(l.ID))
					}
				}
				emit(perfettoEvent{Name: name, Cat: "metric", Ph: "C", Ts: ts(ev.Time), Pid: pid(l.ID), Args: map[string]any{"value": x}})
			}
		}
	}
	if werr != nil {
		return werr
	}
	fmt.Fprintf(bw, "\n],\n\"otherData\":{\"flows_left_out\":%d}}\n", backward)
	return bw.Flush()
}

// perfettoGUID is a GUID as a JSON number when JavaScript holds it exactly
// (below 2^53), else as a decimal string.
func perfettoGUID(g uint64) any {
	if g < 1<<53 {
		return g
	}
	return strconv.FormatUint(g, 10)
}

// perfettoMicros writes d in microseconds with three decimals.
func perfettoMicros(d time.Duration) json.Number {
	ns := int64(d)
	return json.Number(strconv.FormatInt(ns/1000, 10) + "." + fmt.Sprintf("%03d", ns%1000))
}

// metricMember is the member that value i of a Metric event of metric
// (a metric class) stands for.
func (a *OTF2Archive) metricMember(metric uint32, i int) (uint32, bool) {
	c, ok := a.MetricClasses[metric]
	if !ok || i >= len(c.Members) {
		return 0, false
	}
	if _, ok := a.MetricMembers[c.Members[i]]; !ok {
		return 0, false
	}
	return c.Members[i], true
}

// metricFloat is a metric value as a float64, false for NaN, infinities
// and types that are not numbers.
func metricFloat(v OTF2MetricValue) (float64, bool) {
	var x float64
	switch v.Type {
	case OTF2TypeDouble:
		x = math.Float64frombits(v.Value)
	case OTF2TypeFloat:
		x = float64(math.Float32frombits(uint32(v.Value)))
	case OTF2TypeUint8, OTF2TypeUint16, OTF2TypeUint32, OTF2TypeUint64:
		x = float64(v.Value)
	case OTF2TypeInt8, OTF2TypeInt16, OTF2TypeInt32, OTF2TypeInt64:
		x = float64(int64(v.Value))
	default:
		return 0, false
	}
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}
