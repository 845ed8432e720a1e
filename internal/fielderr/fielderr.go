// Package fielderr is the error a library's Validate method returns for a
// bad setting: it names the setting by its Go field, so that a command can
// name it by its flag instead (the library does not know the flags).
package fielderr

import (
	"errors"
	"fmt"
)

// Error is one bad field: Field is the Go name (e.g. "Slice"), Value what
// it held (nil: the reason says it), Reason why it is refused ("must be at
// least 1ms").
type Error struct {
	Field  string
	Value  any
	Reason string
}

func (e *Error) Error() string { return Format(e.Field, e) }

// Format is e's message with name in place of its field: "name value:
// reason", or "name: reason" without a value.
func Format(name string, e *Error) string {
	if e.Value == nil {
		return fmt.Sprintf("%s: %s", name, e.Reason)
	}
	return fmt.Sprintf("%s %v: %s", name, e.Value, e.Reason)
}

// New returns an *Error.
func New(field string, value any, format string, args ...any) *Error {
	return &Error{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// All returns every *Error in err (a single one or an errors.Join of them).
func All(err error) []*Error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return []*Error{e}
	}
	var out []*Error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		out = append(out, e)
	}
	return out
}
