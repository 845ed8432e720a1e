package swf

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel causes carried in ParseError.Err, for use with errors.Is.
var (
	ErrFieldCount  = errors.New("expected 18 fields")
	ErrNotNumber   = errors.New("not a number")
	ErrNotFinite   = errors.New("not a finite number")
	ErrOutOfRange  = errors.New("out of range")
	ErrNotInteger  = errors.New("not an integer")
	ErrLineTooLong = errors.New("line longer than 1 MiB")
	ErrNotSWF      = errors.New("not an SWF file")
	ErrNotGzip     = errors.New("not gzip")
)

// MaxLineLength is the longest line (excluding the line terminator) the
// Reader accepts. Real SWF lines are about 100 bytes; the limit bounds the
// memory a corrupt or hostile input can make the Reader allocate.
const MaxLineLength = 1 << 20

// maxErrValue bounds ParseError.Value so that an error built from a
// huge or binary line stays printable.
const maxErrValue = 40

// ParseError names the exact place of a problem in SWF input.
type ParseError struct {
	File  string // name given to NewReader or Open
	Line  int    // 1-based line number
	Field int    // 1-based SWF field, 0 when the problem is the line as a whole
	Key   string // header key, when the problem is a header value
	Value string // offending text (truncated to 40 bytes)
	Err   error  // the cause, one of the Err* sentinels (possibly wrapped)
}

// Error formats the error as `file:line: [field N (name): | header Key: ]["value": ]cause`.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	} else {
		b.WriteString("line ")
	}
	b.WriteString(strconv.Itoa(e.Line))
	b.WriteString(": ")
	quote := false
	switch {
	case e.Key != "":
		b.WriteString("header ")
		b.WriteString(e.Key)
		b.WriteString(": ")
		quote = true
	case e.Field > 0:
		b.WriteString("field ")
		b.WriteString(strconv.Itoa(e.Field))
		if name := FieldName(e.Field); name != "" {
			b.WriteString(" (")
			b.WriteString(name)
			b.WriteByte(')')
		}
		b.WriteString(": ")
		quote = true
	}
	if quote {
		b.WriteString(strconv.Quote(e.Value))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid input")
	}
	return b.String()
}

// Unwrap returns the cause, so errors.Is(err, ErrNotNumber) works.
func (e *ParseError) Unwrap() error { return e.Err }

// truncValue copies at most maxErrValue bytes of b, cutting on a rune
// boundary so the quoted value never ends in a broken UTF-8 sequence.
func truncValue(b []byte) string {
	if len(b) <= maxErrValue {
		return string(b)
	}
	n := maxErrValue
	for n > maxErrValue-utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}
