package main

import (
	"errors"

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

// error names one bad field by its flag.
func (names flagNames) error(e *fielderr.Error) error {
	name, ok := names[e.Field]
	if !ok {
		return e
	}
	return errors.New(fielderr.Format(name, e))
}
