package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// StringOf is the string with reference ref, or "" when undefined.
func (a *OTF2Archive) StringOf(ref uint32) string { return a.Strings[ref] }

func (a *OTF2Archive) quoted(ref uint32) string {
	s, ok := a.Strings[ref]
	if !ok {
		return strconv.FormatUint(uint64(ref), 10)
	}
	return `"` + s + `"`
}

func formatOTF2Value(t OTF2Type, v uint64) string {
	switch t {
	case OTF2TypeDouble:
		return strconv.FormatFloat(math.Float64frombits(v), 'g', 6, 64)
	case OTF2TypeFloat:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(v))), 'g', 6, 32)
	case OTF2TypeInt8:
		return strconv.FormatInt(int64(int8(v)), 10)
	case OTF2TypeInt16:
		return strconv.FormatInt(int64(int16(v)), 10)
	case OTF2TypeInt32:
		return strconv.FormatInt(int64(int32(uint32(v))), 10)
	case OTF2TypeInt64:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatUint(v, 10)
}

const otf2PrintIndent = 71 // column of the Attributes field

// PrintEvents writes the archive's events the way `otf2-print ARCHIVE`
// does by default (header, then one line per event in time order, plus an
// ADDITIONAL ATTRIBUTES line for events with attributes). It supports
// Enter, Leave and Metric events.
func (a *OTF2Archive) PrintEvents(out io.Writer) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "\n=== OTF2-PRINT ===\n=== Events %s\n", strings.Repeat("=", 69))
	fmt.Fprintf(w, "%-32s %15s %20s  %s\n%s\n", "Event", "Location", "Timestamp", "Attributes", strings.Repeat("-", 80))
	var line bytes.Buffer
	for _, ev := range a.MergedEvents() {
		line.Reset()
		switch ev.Kind {
		case OTF2Enter, OTF2Leave:
			name := "ENTER"
			if ev.Kind == OTF2Leave {
				name = "LEAVE"
			}
			fmt.Fprintf(&line, "%-32s %15d %20d  Region: ", name, ev.Location, ev.Time)
			if r, ok := a.Regions[ev.Region]; ok {
				fmt.Fprintf(&line, "%s <%d>", a.quoted(r.Name), ev.Region)
			} else {
				fmt.Fprintf(&line, "%d", ev.Region)
			}
		case OTF2Metric:
			fmt.Fprintf(&line, "%-32s %15d %20d  Metric: %d, %d Value: ", "METRIC", ev.Location, ev.Time, ev.Metric, len(ev.Values))
			members := a.MetricClasses[ev.Metric].Members
			for i, v := range ev.Values {
				if i > 0 {
					line.WriteString(", ")
				}
				if i < len(members) {
					m := a.MetricMembers[members[i]]
					fmt.Fprintf(&line, "(%s <%d>; %s; %s)", a.quoted(m.Name), members[i], v.Type, formatOTF2Value(v.Type, v.Value))
				} else {
					fmt.Fprintf(&line, "(%s; %s)", v.Type, formatOTF2Value(v.Type, v.Value))
				}
			}
		}
		line.WriteByte('\n')
		if len(ev.Attrs) > 0 {
			line.WriteString(strings.Repeat(" ", otf2PrintIndent))
			line.WriteString("ADDITIONAL ATTRIBUTES: ")
			for i, at := range ev.Attrs {
				if i > 0 {
					line.WriteString(", ")
				}
				name := strconv.FormatUint(uint64(at.Ref), 10)
				if def, ok := a.Attributes[at.Ref]; ok {
					name = a.quoted(def.Name)
				}
				fmt.Fprintf(&line, "(%s <%d>; %s; %s)", name, at.Ref, at.Type, formatOTF2Value(at.Type, at.Value))
			}
			line.WriteByte('\n')
		}
		w.Write(line.Bytes())
	}
	return w.Flush()
}
