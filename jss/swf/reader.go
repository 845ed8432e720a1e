package swf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// readBufferSize is large enough that almost every line is returned by
// bufio.Reader.ReadSlice without copying; longer lines take a slower path.
const readBufferSize = 64 << 10

// maxSkippedErrors bounds SkippedErrors so a badly broken file cannot make
// lenient reading hold one error per line.
const maxSkippedErrors = 10

// Option configures a Reader.
type Option func(*options)

type options struct {
	lenient bool
}

// WithLenient makes the Reader skip malformed job lines, over-long lines
// and malformed typed header values instead of failing. Skipped problems
// are counted (Skipped) and the first few kept (SkippedErrors).
func WithLenient() Option { return func(o *options) { o.lenient = true } }

// Reader reads SWF records one at a time from an io.Reader.
type Reader struct {
	br      *bufio.Reader
	name    string
	lenient bool

	line      int // number of the line last read
	hdr       Header
	open      openField
	seenTyped uint16 // well-known keys met so far, see Header.typedSlot

	long []byte // reused for lines that do not fit the bufio buffer

	// pending holds a result produced while the header (or a header error)
	// had to be returned first; Next hands it out before reading on.
	pending    bool
	pendingRec Record
	pendingErr error

	fromJob bool  // whether the last advance result came from a job line
	err     error // sticky: io.EOF or a wrapped read error

	skipped     int
	skippedErrs []error
}

// NewReader returns a Reader for r. It reads the header block eagerly, up to
// and including the first job line, so Header is complete before the first
// call to Next. name is used in error messages (a path, or "<stdin>").
//
// NewReader fails on a read error and, in strict mode, on a malformed typed
// header value or an over-long comment line. A problem with the first job
// line is reported by the first call to Next, as for any other job line.
func NewReader(r io.Reader, name string, opts ...Option) (*Reader, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rd := &Reader{br: bufio.NewReaderSize(r, readBufferSize), name: name, lenient: o.lenient}
	var rec Record
	err := rd.advance(&rec)
	if err != nil && err != io.EOF && !rd.fromJob {
		return nil, err
	}
	// No header and a first line that is not a job: this is not SWF at
	// all (a log, a binary, the wrong file), and saying so beats any
	// later complaint about the machine size or line 1's fields.
	var pe *ParseError
	if len(rd.hdr.Fields) == 0 && errors.As(err, &pe) && !errors.Is(pe.Err, ErrNotSWF) {
		notSWF := *pe
		notSWF.Err = fmt.Errorf("%w (no header, and this is no job line: %w)", ErrNotSWF, pe.Err)
		return nil, &notSWF
	}
	rd.stash(rec, err)
	return rd, nil
}

// Header returns the header. It is complete for the header block when
// NewReader returns; comment lines found later between jobs are appended
// to its Fields as Next reaches them. It belongs to the Reader: read it,
// but do not modify it while still reading.
func (r *Reader) Header() *Header { return &r.hdr }

// Next returns the next job record, or io.EOF after the last one.
//
// A malformed line yields a *ParseError; in strict mode the Reader stays
// usable, and the following call continues with the next line. Read errors
// are returned wrapped (`swf: read NAME: ...`) and are sticky.
func (r *Reader) Next() (rec Record, err error) {
	if r.pending {
		rec, err := r.pendingRec, r.pendingErr
		r.pending, r.pendingRec, r.pendingErr = false, Record{}, nil
		return rec, err
	}
	err = r.advance(&rec)
	return rec, err
}

// Skipped returns the number of malformed lines and header values skipped
// in lenient mode.
func (r *Reader) Skipped() int { return r.skipped }

// SkippedErrors returns the errors for the first 10 skipped problems.
func (r *Reader) SkippedErrors() []error {
	return append([]error(nil), r.skippedErrs...)
}

func (r *Reader) skip(err error) {
	r.skipped++
	if len(r.skippedErrs) < maxSkippedErrors {
		r.skippedErrs = append(r.skippedErrs, err)
	}
}

func (r *Reader) stash(rec Record, err error) {
	r.pending, r.pendingRec, r.pendingErr = true, rec, err
}

// advance reads lines until it has a job record (which it stores in *rec,
// left as it was on an error) or an error to return, feeding comment lines
// to the header on the way. The record goes by pointer: returned by value
// through each call it was copied four times, 150 bytes a line.
func (r *Reader) advance(rec *Record) error {
	for {
		if r.err != nil {
			r.fromJob = false
			return r.finish(nil, r.err)
		}
		line, isComment, err := r.readLine()
		if err != nil {
			if _, ok := err.(*ParseError); !ok { // EOF or read error
				r.err = err
				continue
			}
			// An over-long line breaks any header continuation.
			r.fromJob = !isComment
			if r.lenient {
				_ = r.closeField() // lenient: never fails
				r.skip(err)
				continue
			}
			return r.finish(nil, err)
		}
		i := 0
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			continue // blank lines carry nothing
		}
		if line[i] == ';' {
			if err := r.comment(trimRight(line[i+1:])); err != nil {
				r.fromJob = false
				return err
			}
			continue
		}
		err = r.parseRecord(line[i:], rec) // the blanks before i are skipped
		if err != nil && r.lenient {
			_ = r.closeField() // first, so skipped errors stay in line order
			r.skip(err)
			continue
		}
		r.fromJob = true
		return r.finish(rec, err)
	}
}

// finish closes the open header field before returning a result (err, and
// the record in *rec when err is nil; rec may be nil when err is not),
// since the line that produced the result ends it. If closing fails
// (strict mode), the header error goes first and the result waits in
// pending.
func (r *Reader) finish(rec *Record, err error) error {
	if cerr := r.closeField(); cerr != nil {
		var pend Record
		if err == nil {
			pend, *rec = *rec, Record{}
		}
		r.stash(pend, err)
		r.fromJob = false
		return cerr
	}
	return err
}

// readLine returns the next line without its terminator ("\n" or "\r\n").
// The slice is valid until the next call. For an over-long line it returns a
// *ParseError after discarding the rest of the line, and reports whether
// the line was a comment so the caller can tell header from job problems.
func (r *Reader) readLine() (line []byte, isComment bool, err error) {
	line, err = r.br.ReadSlice('\n')
	switch {
	case err == nil:
		r.line++
		return trimEOL(line), false, nil
	case err == io.EOF && len(line) > 0: // last line without a newline
		r.line++
		return trimEOL(line), false, nil
	case err == io.EOF:
		return nil, false, io.EOF
	case err != bufio.ErrBufferFull:
		return nil, false, r.readErr(err)
	}
	// The line does not fit the buffer: collect it, up to the limit.
	r.line++
	r.long = append(r.long[:0], line...)
	for {
		line, err = r.br.ReadSlice('\n')
		if len(r.long)+len(line) > MaxLineLength+2 { // +2: room for "\r\n"
			break
		}
		r.long = append(r.long, line...)
		switch {
		case err == nil || err == io.EOF:
			if l := trimEOL(r.long); len(l) <= MaxLineLength {
				return l, false, nil
			}
			return nil, isCommentStart(r.long), r.tooLong()
		case err != bufio.ErrBufferFull:
			return nil, false, r.readErr(err)
		}
	}
	// Over the limit: drop the rest of the line without keeping it.
	for err == bufio.ErrBufferFull {
		_, err = r.br.ReadSlice('\n')
	}
	if err != nil && err != io.EOF {
		return nil, false, r.readErr(err)
	}
	return nil, isCommentStart(r.long), r.tooLong()
}

func (r *Reader) tooLong() error {
	pe := &ParseError{File: r.name, Line: r.line, Value: truncValue(r.long), Err: ErrLineTooLong}
	if cap(r.long) > 2*readBufferSize {
		r.long = nil // do not pin a megabyte for the rest of the file
	}
	return pe
}

func (r *Reader) readErr(err error) error {
	return fmt.Errorf("swf: read %s: %w", r.name, err)
}

func isCommentStart(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return c == ';'
		}
	}
	return false
}

// parseRecord splits a job line into its 18 fields by hand, converting
// plain integers (nearly every field of real logs) in the same pass; other
// fields go through parseNumber. A wrong field count takes precedence over a
// bad field: it is the likelier diagnosis (a truncated or merged line) and
// the more useful message.
func (r *Reader) parseRecord(line []byte, rec *Record) error {
	var f [NumFields]float64
	n, bad := 0, 0
	var badErr error
	var badVal []byte
	for i := 0; i < len(line); {
		// Fields are padded with runs of spaces: a loop of their own,
		// one comparison a byte, before the test for other blanks.
		for line[i] == ' ' {
			if i++; i == len(line) {
				break
			}
		}
		if i == len(line) {
			break
		}
		if isSpace(line[i]) {
			i++
			continue
		}
		start := i
		neg := line[i] == '-'
		if neg {
			i++
		}
		digits := i
		var u int64
		for i < len(line) {
			d := line[i] - '0'
			if d > 9 {
				break
			}
			u = u*10 + int64(d) // may wrap past 15 digits; then unused
			i++
		}
		var v float64
		if nd := i - digits; nd > 0 && nd <= 15 && (i == len(line) || isSpace(line[i])) {
			v = float64(u) // < 2^53, so exact
			if neg {
				v = -v // "-0" stays negative zero, as with ParseFloat
			}
		} else {
			for i < len(line) && !isSpace(line[i]) {
				i++
			}
			var err error
			if v, err = parseNumber(line[start:i]); err != nil && bad == 0 && n < NumFields {
				bad, badErr, badVal = n+1, err, line[start:i]
			}
		}
		if n < NumFields {
			f[n] = v
		}
		n++
	}
	if n != NumFields {
		return &ParseError{File: r.name, Line: r.line,
			Err: fmt.Errorf("%w, got %d", ErrFieldCount, n)}
	}
	if bad != 0 {
		return &ParseError{File: r.name, Line: r.line, Field: bad,
			Value: truncValue(badVal), Err: badErr}
	}
	rec.Line = r.line
	rec.SetFields(f)
	return nil
}

// parseNumber parses one field. Plain integers of up to 15 digits (nearly
// every field of real logs) are converted directly, exactly and without
// allocating; anything else goes through strconv.ParseFloat, restricted to
// decimal notation so that "inf", "nan" and hex floats are rejected.
func parseNumber(b []byte) (float64, error) {
	s := b
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) > 0 && len(s) <= 15 { // < 2^53, so float64(n) is exact
		var n int64
		ok := true
		for _, c := range s {
			if c-'0' > 9 {
				ok = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if ok {
			v := float64(n)
			if neg {
				v = -v // keeps "-0" as negative zero, as ParseFloat would
			}
			return v, nil
		}
	}
	for _, c := range b {
		if c-'0' > 9 && c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+' {
			if isInfOrNaN(b) {
				return 0, ErrNotFinite
			}
			return 0, ErrNotNumber
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0) {
			return 0, ErrOutOfRange
		}
		return 0, ErrNotNumber
	}
	return v, nil
}

// isInfOrNaN reports whether b is a spelling of infinity or NaN that
// ParseFloat would accept, so such fields get the clearer message.
func isInfOrNaN(b []byte) bool {
	if len(b) > 16 {
		return false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return err == nil && (math.IsInf(v, 0) || math.IsNaN(v))
}

// spaceMask has bit c set for each byte c the format treats as blank.
const spaceMask = 1<<' ' | 1<<'\t' | 1<<'\r' | 1<<'\v' | 1<<'\f'

// isSpace reports whether c separates fields. Digits fail the first
// comparison, which keeps the common case to one branch.
func isSpace(c byte) bool {
	return c <= ' ' && spaceMask>>c&1 != 0
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func trimRight(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
