package trace

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
)

// FindOTF2 returns the anchor file of the archive at path: path itself
// when it is a file, else the one *.otf2 file in the directory path. No
// archive, or several, is an error naming the directory.
func FindOTF2(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("trace: %w", err)
	}
	if !st.IsDir() {
		return path, nil
	}
	anchors, err := filepath.Glob(filepath.Join(path, "*.otf2"))
	if err != nil {
		return "", fmt.Errorf("trace: %s: %w", path, err)
	}
	switch len(anchors) {
	case 0:
		return "", fmt.Errorf("trace: %s: no OTF2 archive (no *.otf2 anchor file)", path)
	case 1:
		return anchors[0], nil
	}
	return "", fmt.Errorf("trace: %s: %d OTF2 archives (%s); name the anchor file", path, len(anchors), strings.Join(anchors, ", "))
}

// WriteSummary writes what a run's archive says about it: the archive
// (creator, localities, lanes, events), the utilisation of each locality
// and of the whole run (busy time / (wall × lanes), see Profile), and the
// combined profile; with perLocality, each locality's profile too.
func WriteSummary(w io.Writer, a *OTF2Archive, perLocality bool) error {
	per, all, err := ProfileFromOTF2(a)
	if err != nil {
		return fmt.Errorf("%s: %w", a.Path, err)
	}
	nEvents := 0
	for _, evs := range a.Events {
		nEvents += len(evs)
	}
	fmt.Fprintf(w, "archive %s: %d localities, %d lanes, %d events", a.Path, len(per), all.Lanes, nEvents)
	if a.Anchor.Creator != "" {
		fmt.Fprintf(w, ", written by %s", a.Anchor.Creator)
	}
	fmt.Fprintf(w, "\nwall time %v\n\n", all.Wall)

	locs := sortedKeys(per)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "locality\tlanes\tbusy\tavailable\tutilisation\t")
	row := func(name string, p *Profile) {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%.1f%%\t\n", name, max(p.Lanes, 1), p.Busy, p.available(), 100*p.Share(p.Busy))
	}
	for _, l := range locs {
		row(strconv.FormatUint(uint64(l), 10), per[l])
	}
	row("all", all)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := all.WriteText(w, "profile of all localities"); err != nil {
		return err
	}
	if !perLocality {
		return nil
	}
	for _, l := range locs {
		fmt.Fprintln(w)
		if err := per[l].WriteText(w, fmt.Sprintf("profile of locality %d", l)); err != nil {
			return err
		}
	}
	return nil
}

// WriteProfilesCSV writes the profiles of the localities (in increasing
// order) and the combined one (locality "all") as one CSV table with the
// columns of Profile.WriteCSV.
func WriteProfilesCSV(w io.Writer, perLocality map[uint32]*Profile, combined *Profile) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(profileCSVHeader); err != nil {
		return err
	}
	for _, l := range sortedKeys(perLocality) {
		if err := perLocality[l].csvRows(cw, strconv.FormatUint(uint64(l), 10)); err != nil {
			return err
		}
	}
	if err := combined.csvRows(cw, "all"); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}
