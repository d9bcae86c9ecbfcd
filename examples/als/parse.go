package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// format is the layout of a MovieLens ratings file, told from its first
// line: ml-20m and ml-25m's ratings.csv (userId,movieId,rating,timestamp,
// a header line) or ml-1m and ml-10m's ratings.dat
// (UserID::MovieID::Rating::Timestamp, no header).
type format struct {
	sep    []byte    // between fields
	names  [4]string // of the fields, for messages
	header bool      // a first line whose first field is not a number is a header
}

// detectFormat tells the format from the start of the file: "::" in the
// first line makes it a .dat file, anything else a .csv file.
func detectFormat(first []byte) format {
	line, _, _ := bytes.Cut(first, []byte("\n"))
	if bytes.Contains(line, []byte("::")) {
		return format{sep: []byte("::"), names: [4]string{"UserID", "MovieID", "Rating", "Timestamp"}}
	}
	return format{sep: []byte(","), names: [4]string{"userId", "movieId", "rating", "timestamp"}, header: true}
}

// fieldsWant is the expected layout, for messages.
func (f format) fieldsWant() string {
	s := string(f.sep)
	return f.names[0] + s + f.names[1] + s + f.names[2] + "[" + s + f.names[3] + "]"
}

// lineError is what is wrong with one line: a message, and the byte
// column (1-based) where it was found.
type lineError struct {
	col int
	msg string
}

// parseLine parses one line (no line end) of f into a triple of the raw
// ids, with no allocation on good input: the ids and the rating are read
// straight from the bytes. Ids must fit an int32 (MovieLens ids do).
func (f format) parseLine(line []byte) (triple, *lineError) {
	var t triple
	off := 0 // byte offset of the current field in line
	rest := line
	n := 0 // fields seen
	for {
		field, tail, found := cutSep(rest, f.sep)
		if n == 4 {
			return triple{}, &lineError{col: off + 1, msg: fmt.Sprintf("more than 4 fields (%s)", f.fieldsWant())}
		}
		if err := f.parseField(&t, n, field, off); err != nil {
			return triple{}, err
		}
		n++
		if !found {
			break
		}
		off += len(field) + len(f.sep)
		rest = tail
	}
	if n < 3 {
		return triple{}, &lineError{col: len(line) + 1, msg: fmt.Sprintf("%d fields, want %s", n, f.fieldsWant())}
	}
	return t, nil
}

func cutSep(s, sep []byte) (before, after []byte, found bool) {
	var i int
	if len(sep) == 1 {
		i = bytes.IndexByte(s, sep[0])
	} else {
		i = bytes.Index(s, sep)
	}
	if i < 0 {
		return s, nil, false
	}
	return s[:i], s[i+len(sep):], true
}

// parseField parses field n (at byte offset off of its line) into t.
func (f format) parseField(t *triple, n int, field []byte, off int) *lineError {
	lead, end := 0, len(field)
	for lead < end && (field[lead] == ' ' || field[lead] == '\t') {
		lead++
	}
	for end > lead && (field[end-1] == ' ' || field[end-1] == '\t') {
		end--
	}
	trimmed := field[lead:end]
	col := off + lead + 1
	switch n {
	case 0, 1, 3:
		v, ok := parseInt(trimmed)
		if !ok || (n < 3 && v > math.MaxInt32) {
			what := "an integer"
			if ok {
				what = "an id that fits 31 bits"
			}
			return &lineError{col: col, msg: fmt.Sprintf("column %d (%s): %q is not %s", n+1, f.names[n], trimmed, what)}
		}
		switch n {
		case 0:
			t.user = int32(v)
		case 1:
			t.item = int32(v)
		}
	case 2:
		v, ok := parseRating(trimmed)
		if !ok {
			return &lineError{col: col, msg: fmt.Sprintf("column 3 (%s): %q is not a positive number", f.names[2], trimmed)}
		}
		t.rating = v
	}
	return nil
}

// parseInt parses a non-negative decimal integer of up to 18 digits.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseRating parses a positive, finite rating. The common forms, digits
// with at most one point ("4", "3.5", "4.0"), are read from the bytes: the
// digits as an integer divided by a power of ten, both exact, so the one
// division rounds correctly. Anything else goes through strconv.
func parseRating(b []byte) (float32, bool) {
	var m int64
	digits, frac, point := 0, 0, false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9' && digits < 15:
			m = m*10 + int64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			return parseRatingSlow(b)
		}
	}
	if digits == 0 {
		return 0, false
	}
	v := float32(float64(m) / math.Pow10(frac))
	return v, v > 0
}

func parseRatingSlow(b []byte) (float32, bool) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > math.MaxFloat32 {
		return 0, false
	}
	return float32(v), true
}
