package main

import (
	"errors"
	"slices"

	"github.com/cosched/cosched/internal/fielderr"
)

// flagNames maps a library's Options fields to a command's flags.
type flagNames map[string]string

// errors turns a library Validate error into the command's usage error,
// every bad field named by its flag; an error that names no field is
// returned as it is.
func (names flagNames) errors(err error) error {
	fields := fielderr.All(err)
	if len(fields) == 0 {
		return err
	}
	errs := make([]error, 0, len(fields))
	for _, e := range fields {
		errs = append(errs, names.error(e))
	}
	return flagErrors(errs)
}

// error names one bad field, and the others its message involves, by
// their flags.
func (names flagNames) error(e *fielderr.Error) error {
	if _, ok := names[e.Field]; !ok {
		return e
	}
	return errors.New(e.Render(names.flag))
}

// flag is field's flag, or field itself if it has none.
func (names flagNames) flag(field string) string {
	if name, ok := names[field]; ok {
		return name
	}
	return field
}

// list is every bad field of a library Validate error, named by its flag,
// but the skipped ones (fields whose flag did not parse: Validate's word
// on them is noise).
func (names flagNames) list(err error, skip ...string) []error {
	var errs []error
	for _, e := range fielderr.All(err) {
		if !slices.Contains(skip, e.Field) {
			errs = append(errs, names.error(e))
		}
	}
	return errs
}
