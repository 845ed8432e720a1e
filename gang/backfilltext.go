package gang

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/cosched/cosched/internal/fielderr"
)

// BackfillText is Backfill as a command line or a settings file writes it
// (cosched's --reservations, --reservations-mode and --weights; the toml
// tags are the keys of the agent's --config file). An empty field is the
// default.
type BackfillText struct {
	Reservations     string `toml:"reservations"`      // a count, or inf (ParseReservations)
	ReservationsMode string `toml:"reservations_mode"` // dynamic or fixed
	Weights          string `toml:"weights"`           // e.g. ww=1,wx=5 (ParseWeights)
}

// Parse reads t for policies, those the options will configure (nil: not
// known, so whether the options apply to them is not checked). given says
// which of t's fields were set rather than left at their defaults (nil:
// none); an empty one counts as not set. Every problem is a
// *fielderr.Error keyed by t's field.
func (t BackfillText) Parse(policies []Policy, given func(field string) bool) (Backfill, error) {
	var b Backfill
	var errs []error
	if n, err := ParseReservations(cmp.Or(t.Reservations, "1")); err != nil {
		errs = append(errs, fielderr.New("Reservations", strconv.Quote(t.Reservations), "want a count of at least 1, or inf"))
	} else {
		b.Reservations = n
	}
	if m, err := ParseReservationMode(cmp.Or(t.ReservationsMode, string(Dynamic))); err != nil {
		errs = append(errs, fielderr.New("ReservationsMode", strconv.Quote(t.ReservationsMode), "want dynamic or fixed"))
	} else {
		b.Mode = m
	}
	if t.Weights != "" {
		if w, err := ParseWeights(t.Weights); err != nil {
			errs = append(errs, fielderr.New("Weights", strconv.Quote(t.Weights), "%s", strings.TrimPrefix(err.Error(), "gang: ")))
		} else {
			b.Weights = &w
		}
	}
	if policies == nil {
		return b, errors.Join(errs...)
	}
	set := func(field, value string) bool { return value != "" && given != nil && given(field) }
	names := strings.Join([]string{string(FCFSBF), string(SJFBF), string(PriorityBF), string(LXFWBF)}, ", ")
	for _, f := range []struct{ field, value string }{{"Reservations", t.Reservations}, {"ReservationsMode", t.ReservationsMode}} {
		if set(f.field, f.value) && !slices.ContainsFunc(policies, IsPriorityBackfill) {
			errs = append(errs, fielderr.Said(f.field, "applies only to the priority-backfill policies (%s); none is selected", names))
		}
	}
	weighted := func(p Policy) bool { _, ok := PresetWeights(p); return ok }
	if set("Weights", t.Weights) && !slices.ContainsFunc(policies, weighted) {
		errs = append(errs, fielderr.Said("Weights", "applies only to %s, %s and %s; none is selected", FCFSBF, PriorityBF, LXFWBF))
	}
	return b, errors.Join(errs...)
}

// ParseFor is Parse for the one policy p of a controller ("": not known):
// the zero Backfill unless p is a priority-backfill policy (the core
// refuses options with any other).
func (t BackfillText) ParseFor(p Policy, given func(field string) bool) (Backfill, error) {
	var policies []Policy
	if p != "" {
		policies = []Policy{p}
	}
	b, err := t.Parse(policies, given)
	if !IsPriorityBackfill(p) {
		b = Backfill{}
	}
	return b, err
}
