// Package fielderr is the error a library's Validate method returns for a
// bad setting: it names the setting by its Go field, so that a command can
// name it by its flag instead (the library does not know the flags).
//
// A problem may involve several fields: a sum or a product of them
// (Terms), or a limit set by another field, written {Field} in the reason.
// Render names every one of them the caller's way.
package fielderr

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
)

// Error is one bad field: Field is the Go name (e.g. "Slice"), Value what
// it held (nil: the reason says it), Reason why it is refused ("must be at
// least 1ms"). A Reason may name another field as {Field}: "must exceed
// {JobSwitch} 1ms". Terms are further fields the problem is about, written
// after Field with Op between them (Op " + ": "SeqShare 0.8 + LargeShare
// 0.5: must not exceed 1"; Op "/": "SeqShare/LargeShare: …").
type Error struct {
	Field  string
	Value  any
	Reason string
	Terms  []Term
	Op     string
	// Sentence writes Reason right after the field's name, as what is
	// said of it: "--weights applies only to fcfs-bf" (no value, no colon).
	Sentence bool
}

// Term is one more field of a problem about several fields, and its value
// (nil: none written).
type Term struct {
	Field string
	Value any
}

func (e *Error) Error() string { return e.Render(func(field string) string { return field }) }

// fieldRef is a field named inside a reason, compiled on first use: every
// CLI call links this package, few render an error.
var fieldRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([A-Za-z0-9_.\[\]]+)\}`) })

// Render is e's message with every field, in Field, Terms and Reason,
// named by name: "name value: reason", "name: reason" without a value,
// "a 1 + b 2: reason" with terms, "name reason" for a Sentence.
func (e *Error) Render(name func(field string) string) string {
	if e.Sentence {
		return name(e.Field) + " " + Expand(e.Reason, name)
	}
	head := term(name(e.Field), e.Value)
	for _, t := range e.Terms {
		head += e.Op + term(name(t.Field), t.Value)
	}
	return head + ": " + Expand(e.Reason, name)
}

// Expand is text with every field written {Field} in it named by name: a
// warning's text, which names fields as a reason does.
func Expand(text string, name func(field string) string) string {
	return fieldRef().ReplaceAllStringFunc(text, func(ref string) string { return name(ref[1 : len(ref)-1]) })
}

func term(name string, value any) string {
	if value == nil {
		return name
	}
	return fmt.Sprintf("%s %v", name, value)
}

// Format is e's message with name in place of its field (other fields
// keep their Go names).
func Format(name string, e *Error) string {
	return e.Render(func(field string) string {
		if field == e.Field {
			return name
		}
		return field
	})
}

// New returns an *Error.
func New(field string, value any, format string, args ...any) *Error {
	return &Error{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Said returns an *Error written as a sentence about field (Sentence).
func Said(field string, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...), Sentence: true}
}

// Several returns an *Error about several fields at once, written joined
// by op (" + ", " × ", "/"): the first is the Error's Field.
func Several(op string, terms []Term, format string, args ...any) *Error {
	return &Error{Field: terms[0].Field, Value: terms[0].Value, Terms: terms[1:], Op: op, Reason: fmt.Sprintf(format, args...)}
}

// Merge is parsed, the problems of reading settings' text, and after them
// those of checked, a Validate error of what was read, but the ones about
// a field whose text did not parse (Validate's word on it is noise).
func Merge(parsed, checked error) error {
	failed := map[string]bool{}
	for _, e := range All(parsed) {
		failed[e.Field] = true
	}
	errs := []error{parsed}
	for _, e := range All(checked) {
		if !failed[e.Field] {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// All returns every *Error in err: a single one, an errors.Join of them,
// and those wrapped (%w) inside either.
func All(err error) []*Error {
	switch e := err.(type) {
	case nil:
		return nil
	case *Error:
		return []*Error{e}
	case interface{ Unwrap() []error }:
		var out []*Error
		for _, e := range e.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return All(e.Unwrap())
	}
	return nil
}
