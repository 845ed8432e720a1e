package cli

import (
	"errors"
	"slices"

	"github.com/cosched/cosched/internal/fielderr"
)

// FlagNames maps a library's Options fields to a command's flags.
type FlagNames map[string]string

// Errors turns a library Validate error into the command's usage error,
// every bad field named by its flag; an error that names no field is
// returned as it is.
func (names FlagNames) Errors(err error) error {
	fields := fielderr.All(err)
	if len(fields) == 0 {
		return err
	}
	errs := make([]error, 0, len(fields))
	for _, e := range fields {
		errs = append(errs, names.error(e))
	}
	return FlagErrors(errs)
}

// error names one bad field, and the others its message involves, by
// their flags.
func (names FlagNames) error(e *fielderr.Error) error {
	if _, ok := names[e.Field]; !ok {
		return e
	}
	return errors.New(e.Render(names.Flag))
}

// Flag is field's flag, or field itself if it has none.
func (names FlagNames) Flag(field string) string {
	if name, ok := names[field]; ok {
		return name
	}
	return field
}

// List is every bad field of a library Validate error, named by its flag,
// but the skipped ones (fields whose flag did not parse: Validate's word
// on them is noise).
func (names FlagNames) List(err error, skip ...string) []error {
	var errs []error
	for _, e := range fielderr.All(err) {
		if !slices.Contains(skip, e.Field) {
			errs = append(errs, names.error(e))
		}
	}
	return errs
}
