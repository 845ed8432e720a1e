package textvalue

import (
	"strconv"

	"github.com/cosched/cosched/internal/fielderr"
)

// Flag is a setting written as text and read into *To by Parse: a
// pflag.Value of type "string" (as a command's help shows it). Its Set
// never fails, because a flag parser stops at the first error and a
// command should report every bad setting at once: a text Parse refuses
// is kept as Err, keyed by Field with the text quoted (`Field "text":
// reason`), and *To keeps its value.
type Flag[T any] struct {
	To    *T
	Field string
	Parse func(string) (T, error)
	Err   error // the last text's, nil when it parsed
	text  string
}

// NewFlag returns a Flag of field, set to text (its default).
func NewFlag[T any](to *T, field, text string, parse func(string) (T, error)) *Flag[T] {
	f := &Flag[T]{To: to, Field: field, Parse: parse}
	_ = f.Set(text)
	return f
}

// Set reads s into *f.To, or keeps its error in f.Err; it returns nil.
func (f *Flag[T]) Set(s string) error {
	f.text = s
	v, err := f.Parse(s)
	if err != nil {
		f.Err = fielderr.New(f.Field, strconv.Quote(s), "%v", err)
		return nil
	}
	*f.To, f.Err = v, nil
	return nil
}

// String is the text last set.
func (f *Flag[T]) String() string { return f.text }

// Type is "string": the value is written as text.
func (f *Flag[T]) Type() string { return "string" }
