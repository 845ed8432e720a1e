package swf

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// HeaderField is one header comment field. Continuation lines are appended
// to Value joined by "\n", each keeping its indentation relative to the
// first line's value column. Free text that is not part of any "Key:" field
// is kept as a field with an empty Key, one per line, so nothing is lost.
type HeaderField struct{ Key, Value string }

// Header holds the header comments of an SWF file.
type Header struct {
	// Fields is every header field in file order, including unknown keys,
	// repeated keys and comments found after the first job line.
	Fields []HeaderField

	// Typed values of the well-known keys, taken from the first field with
	// that key; zero when absent. Keys match case-insensitively.
	MaxJobs, MaxRecords, MaxNodes, MaxProcs, MaxRuntime, MaxMemory int64
	UnixStartTime, TimeZone                                        int64

	Version, Computer, Installation, TimeZoneString string
	StartTime, EndTime, Preemption                  string
}

// Get returns the value of the first field whose key matches key
// case-insensitively.
func (h *Header) Get(key string) (string, bool) {
	for _, f := range h.Fields {
		if f.Key != "" && strings.EqualFold(f.Key, key) {
			return f.Value, true
		}
	}
	return "", false
}

// Set replaces the value of the first field with the given key, or appends
// a new field, and updates the typed value if key is well-known. It is meant
// for building headers to write; a malformed value for a numeric key or a
// key that SWF cannot represent is rejected and h is left unchanged.
func (h *Header) Set(key, value string) error {
	if !validKey(key) {
		return fmt.Errorf("swf: invalid header key %q", key)
	}
	pi, ps, _ := h.typedSlot(key)
	if pi != nil {
		if _, err := parseHeaderInt(value); err != nil {
			return fmt.Errorf("swf: header %s: %q: %w", key, value, err)
		}
	}
	i := 0
	for i < len(h.Fields) && !strings.EqualFold(h.Fields[i].Key, key) {
		i++
	}
	if i == len(h.Fields) {
		h.Fields = append(h.Fields, HeaderField{Key: key})
	}
	h.Fields[i].Value = value
	return setTyped(pi, ps, value, true) // Fields[i] is the first with key
}

// typedSlot returns where the typed value of a well-known key lives, and a
// bit identifying the key so the Reader can remember which keys it has seen
// without rescanning Fields (which would be quadratic on hostile input).
// For other keys all results are zero.
func (h *Header) typedSlot(key string) (pi *int64, ps *string, bit uint16) {
	switch {
	case strings.EqualFold(key, "MaxJobs"):
		return &h.MaxJobs, nil, 1 << 0
	case strings.EqualFold(key, "MaxRecords"):
		return &h.MaxRecords, nil, 1 << 1
	case strings.EqualFold(key, "MaxNodes"):
		return &h.MaxNodes, nil, 1 << 2
	case strings.EqualFold(key, "MaxProcs"):
		return &h.MaxProcs, nil, 1 << 3
	case strings.EqualFold(key, "MaxRuntime"):
		return &h.MaxRuntime, nil, 1 << 4
	case strings.EqualFold(key, "MaxMemory"):
		return &h.MaxMemory, nil, 1 << 5
	case strings.EqualFold(key, "UnixStartTime"):
		return &h.UnixStartTime, nil, 1 << 6
	case strings.EqualFold(key, "TimeZone"):
		return &h.TimeZone, nil, 1 << 7
	case strings.EqualFold(key, "Version"):
		return nil, &h.Version, 1 << 8
	case strings.EqualFold(key, "Computer"):
		return nil, &h.Computer, 1 << 9
	case strings.EqualFold(key, "Installation"):
		return nil, &h.Installation, 1 << 10
	case strings.EqualFold(key, "TimeZoneString"):
		return nil, &h.TimeZoneString, 1 << 11
	case strings.EqualFold(key, "StartTime"):
		return nil, &h.StartTime, 1 << 12
	case strings.EqualFold(key, "EndTime"):
		return nil, &h.EndTime, 1 << 13
	case strings.EqualFold(key, "Preemption"):
		return nil, &h.Preemption, 1 << 14
	}
	return nil, nil, 0
}

// setTyped stores value in the typed slot when it comes from the first
// field with its key. Later duplicates of a numeric key are still
// validated, so a malformed value is reported wherever it occurs.
func setTyped(pi *int64, ps *string, value string, first bool) error {
	if pi != nil {
		n, err := parseHeaderInt(value)
		if err != nil {
			return err
		}
		if first {
			*pi = n
		}
	}
	if ps != nil && first {
		*ps = value
	}
	return nil
}

func parseHeaderInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, ErrOutOfRange
		}
		return 0, ErrNotInteger
	}
	return n, nil
}

// validKey reports whether key can be written and read back as a key:
// an ASCII letter followed by letters, digits, '_' or '-'. The restriction
// is what lets the Reader tell "Note: ..." from "http://...".
func validKey(key string) bool {
	if key == "" || !isLetter(key[0]) {
		return false
	}
	for i := 1; i < len(key); i++ {
		if !isKeyByte(key[i]) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool  { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isKeyByte(c byte) bool { return isLetter(c) || c-'0' <= 9 || c == '_' || c == '-' }

// splitKey recognises a "Key: value" comment body (already left-trimmed).
// A colon followed by "//" is not a key separator, so that URLs on
// continuation lines ("http://...") are not taken for keys.
func splitKey(b []byte) (key, rest []byte, ok bool) {
	if len(b) == 0 || !isLetter(b[0]) {
		return nil, nil, false
	}
	i := 1
	for i < len(b) && isKeyByte(b[i]) {
		i++
	}
	if i == len(b) || b[i] != ':' || bytes.HasPrefix(b[i+1:], []byte("//")) {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}

// openField is a keyed header field still accepting continuation lines.
// Its value is accumulated in bytes and turned into a string once, at close,
// so that many continuation lines cost linear time.
type openField struct {
	active    bool
	line      int // line of the "Key:" line, for error messages
	key       string
	value     []byte
	threshold int // min indentation (bytes after ';') of a sure continuation
	valueCol  int // column of the value's first character, for relative indent
}

// comment processes the text after the ';' of a comment line (right-trimmed).
//
// Classification, in order: a blank comment ends the open field; a line
// indented at least as far as the column just past the open field's
// "Key: " continues it, whatever it says (that is how the Writer indents,
// so its output always reads back); a "Key:" line starts a new field; any
// other line continues the open field; with no open field it is free text,
// kept under an empty key. Continuation lines keep their indentation beyond
// the first line's value column, so nested lists survive.
func (r *Reader) comment(text []byte) error {
	indent := 0
	for indent < len(text) && isSpace(text[indent]) {
		indent++
	}
	body := text[indent:]
	o := &r.open
	switch {
	case len(body) == 0:
		return r.closeField()
	case o.active && indent >= o.threshold:
		o.value = appendContinuation(o.value, indent-o.valueCol, body)
		return nil
	}
	if key, rest, ok := splitKey(body); ok {
		err := r.closeField()
		colon := indent + len(key)
		lead := 0
		for lead < len(rest) && isSpace(rest[lead]) {
			lead++
		}
		o.active = true
		o.line = r.line
		o.key = string(key)
		o.value = append(o.value[:0], rest[lead:]...)
		o.threshold = colon + 2 // just past "Key: "
		o.valueCol = o.threshold
		if lead < len(rest) {
			o.valueCol = colon + 1 + lead
		}
		return err
	}
	if o.active {
		o.value = appendContinuation(o.value, 0, body)
		return nil
	}
	r.hdr.Fields = append(r.hdr.Fields, HeaderField{Value: string(body)})
	return nil
}

func appendContinuation(v []byte, rel int, body []byte) []byte {
	v = append(v, '\n')
	for ; rel > 0; rel-- {
		v = append(v, ' ')
	}
	return append(v, body...)
}

// closeField moves the open field, if any, into the header and derives its
// typed value. A malformed typed value is returned as a *ParseError in strict
// mode and counted as skipped in lenient mode.
func (r *Reader) closeField() error {
	o := &r.open
	if !o.active {
		return nil
	}
	o.active = false
	h := &r.hdr
	value := string(o.value)
	h.Fields = append(h.Fields, HeaderField{Key: o.key, Value: value})
	pi, ps, bit := h.typedSlot(o.key)
	err := setTyped(pi, ps, value, r.seenTyped&bit == 0)
	r.seenTyped |= bit
	if err == nil {
		return nil
	}
	pe := &ParseError{File: r.name, Line: o.line, Key: o.key, Value: truncValue(o.value), Err: err}
	if r.lenient {
		r.skip(pe)
		return nil
	}
	return pe
}
