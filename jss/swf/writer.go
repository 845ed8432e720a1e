package swf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Writer writes SWF header comments and job lines.
type Writer struct {
	w   *bufio.Writer
	buf []byte // line being built, reused
	num []byte // one formatted number, reused
}

// NewWriter returns a Writer that buffers its output to w; call Flush when done.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriter(w)}
}

// WriteHeader writes h.Fields as "; Key: Value" lines, continuation lines
// indented under the value (";" followed by spaces), then a lone ";". The
// typed fields of h are not consulted: they are derived from Fields.
//
// SWF cannot represent everything a string can hold, so values are written
// normalised: surrounding whitespace is trimmed and empty lines are dropped.
// Fields read by a Reader are already in that form and read back unchanged.
// Free text (empty Key) is written one "; text" line per value line,
// preceded by a lone ";" when it follows a keyed field, so that it is not
// taken for a continuation. Nothing is written for an empty header.
func (w *Writer) WriteHeader(h *Header) error {
	if h == nil || len(h.Fields) == 0 {
		return nil
	}
	// Validate first so an error leaves no half-written header behind.
	for _, f := range h.Fields {
		if f.Key != "" && !validKey(f.Key) {
			return fmt.Errorf("swf: write header: invalid key %q", f.Key)
		}
		if f.Key == "" {
			for _, l := range strings.Split(f.Value, "\n") {
				if _, _, ok := splitKey([]byte(trimString(l))); ok {
					return fmt.Errorf("swf: write header: free text %q would read back as a key", l)
				}
			}
		}
	}
	b := w.buf[:0]
	prevKeyed := false
	for _, f := range h.Fields {
		lines := strings.Split(f.Value, "\n")
		if f.Key == "" {
			if prevKeyed {
				b = append(b, ";\n"...)
			}
			for _, l := range lines {
				if l = trimString(l); l != "" {
					b = append(b, "; "...)
					b = append(b, l...)
					b = append(b, '\n')
				}
			}
			prevKeyed = false
			continue
		}
		b = append(b, "; "...)
		b = append(b, f.Key...)
		b = append(b, ':')
		if first := trimString(lines[0]); first != "" {
			b = append(b, ' ')
			b = append(b, first...)
		}
		b = append(b, '\n')
		// Continuations start at the value column, len(" Key: ") after the
		// ';', which is where the Reader measures relative indentation from.
		indent := len(f.Key) + 3
		for _, l := range lines[1:] {
			l = string(trimRight([]byte(l)))
			if trimString(l) == "" {
				continue
			}
			b = append(b, ';')
			for range indent {
				b = append(b, ' ')
			}
			b = append(b, l...)
			b = append(b, '\n')
		}
		prevKeyed = true
	}
	b = append(b, ";\n"...)
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("swf: write: %w", err)
	}
	return nil
}

// Write writes one job line. Fields are right-aligned to the column widths
// used by the Parallel Workloads Archive (wider values simply widen their
// column); integral values are printed as integers, others in the shortest
// decimal form that reads back to the same float64. Record.Line is ignored.
func (w *Writer) Write(r *Record) error {
	// Minimum widths of the archive's logs (e.g. KTH-SP2), so output lines up.
	widths := [NumFields]int{5, 8, 6, 6, 4, 6, 5, 4, 6, 5, 2, 3, 3, 3, 2, 2, 2, 2}
	f := r.Fields()
	b := w.buf[:0]
	for i, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("swf: write: field %d (%s): %v is not a finite number", i+1, FieldName(i+1), v)
		}
		w.num = appendNumber(w.num[:0], v)
		if i > 0 {
			b = append(b, ' ')
		}
		for pad := widths[i] - len(w.num); pad > 0; pad-- {
			b = append(b, ' ')
		}
		b = append(b, w.num...)
	}
	b = append(b, '\n')
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("swf: write: %w", err)
	}
	return nil
}

// Flush writes any buffered data to the underlying io.Writer.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("swf: write: %w", err)
	}
	return nil
}

// appendNumber formats v so that parseNumber reads back exactly v.
func appendNumber(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		if v == 0 && math.Signbit(v) {
			return append(b, "-0"...)
		}
		return strconv.AppendInt(b, int64(v), 10)
	}
	// 'f' never uses an exponent, and -1 precision gives the shortest
	// digits that round-trip; integral values come out without a point.
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// trimString trims the whitespace the Reader treats as blank (ASCII only,
// unlike strings.TrimSpace, so that reading and writing agree).
func trimString(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}
