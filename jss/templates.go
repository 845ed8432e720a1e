package jss

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/jss/swf"
)

// TemplateKey is the SWF header key that lists a workload's benchmark
// templates, one "; Template: <k> <template>" line each, k numbering them
// from 1. A job line's executable field (14) holds the k of its template,
// or -1. `cosched sim gen` writes this convention; SWFSource reads it.
const TemplateKey = "Template"

// ReadTemplates parses the Template lines of an SWF header written by
// WriteSWF: "; Template: <k> <template>", with k ≥ 1 unique. It returns the
// templates by k (empty when there are none); errors name the line's text.
func ReadTemplates(h *swf.Header) (map[int]bench.Template, error) {
	out := map[int]bench.Template{}
	var errs []error
	for _, f := range h.Fields {
		if !strings.EqualFold(f.Key, TemplateKey) {
			continue
		}
		line := fmt.Sprintf("; %s: %s", f.Key, f.Value)
		num, text, ok := strings.Cut(strings.TrimSpace(f.Value), " ")
		if !ok {
			errs = append(errs, fmt.Errorf("header %q: want \"%s: <k> <template>\"", line, TemplateKey))
			continue
		}
		k, err := strconv.Atoi(num)
		if err != nil || k < 1 {
			errs = append(errs, fmt.Errorf("header %q: template index %q: want an integer ≥ 1", line, num))
			continue
		}
		t, err := bench.ParseTemplate(strings.TrimSpace(text))
		if err != nil {
			errs = append(errs, fmt.Errorf("header %q: %w", line, err))
			continue
		}
		if _, dup := out[k]; dup {
			errs = append(errs, fmt.Errorf("header %q: template %d is defined twice", line, k))
			continue
		}
		out[k] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("jss: %w", err)
	}
	return out, nil
}
