package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cosched/cosched/gang"
)

// backfillFlags are the options of the priority-backfill policies
// (fcfs-bf, sjf-bf, priority-bf, lxfw-bf), shared by cosched sim, cosched
// agent (where a --config file may set them too: the TOML keys are the
// tags) and cosched cluster up. An empty value means the default.
type backfillFlags struct {
	Reservations string `toml:"reservations"`
	ResvMode     string `toml:"reservations_mode"`
	Weights      string `toml:"weights"`
}

// add defines the flags; scope, when not empty, prefixes their help (e.g.
// "controller, ").
func (b *backfillFlags) add(fl *pflag.FlagSet, scope string) {
	fl.StringVar(&b.Reservations, "reservations", "1", scope+"priority-backfill policies: how many queued jobs hold a reservation (N), or inf for every one")
	fl.StringVar(&b.ResvMode, "reservations-mode", string(gang.Dynamic), scope+"priority-backfill policies: dynamic (the current top N, recomputed every pass) or fixed (a job keeps its reservation once given)")
	fl.StringVar(&b.Weights, "weights", "", scope+"fcfs-bf, priority-bf, lxfw-bf: priority weights replacing the preset's, e.g. ww=1,wx=5,wp=0.2,wm=0 (wait hours, expansion, processors, memory share)")
}

// args returns the options that were given (changed and not empty) as
// command-line arguments, to pass them on to another cosched command.
func (b *backfillFlags) args(changed func(string) bool) []string {
	var out []string
	for _, o := range []struct{ name, val string }{{"reservations", b.Reservations}, {"reservations-mode", b.ResvMode}, {"weights", b.Weights}} {
		if o.val != "" && changed(o.name) {
			out = append(out, "--"+o.name, o.val)
		}
	}
	return out
}

// parse resolves the options for the chosen policies (nil: not known, so
// whether the options apply is not checked); changed tells whether a flag
// was given (on the command line or in a config file). An empty value is
// the default and counts as not given. Every problem names its flag.
func (b *backfillFlags) parse(policies []gang.Policy, changed func(string) bool) (gang.Backfill, []error) {
	var out gang.Backfill
	var errs []error
	anyBF, anyWeighted := false, false
	for _, p := range policies {
		if gang.IsPriorityBackfill(p) {
			anyBF = true
		}
		if _, ok := gang.PresetWeights(p); ok {
			anyWeighted = true
		}
	}
	value := map[string]string{"reservations": b.Reservations, "reservations-mode": b.ResvMode, "weights": b.Weights}
	given := func(name string) bool { return value[name] != "" && changed(name) }
	bfNames := strings.Join([]string{string(gang.FCFSBF), string(gang.SJFBF), string(gang.PriorityBF), string(gang.LXFWBF)}, ", ")
	resv := b.Reservations
	if resv == "" {
		resv = "1"
	}
	if n, err := gang.ParseReservations(resv); err != nil {
		errs = append(errs, fmt.Errorf("--reservations %q: want a count of at least 1, or inf", b.Reservations))
	} else {
		out.Reservations = n
	}
	mode := b.ResvMode
	if mode == "" {
		mode = string(gang.Dynamic)
	}
	if m, err := gang.ParseReservationMode(mode); err != nil {
		errs = append(errs, fmt.Errorf("--reservations-mode %q: want dynamic or fixed", b.ResvMode))
	} else {
		out.Mode = m
	}
	if b.Weights != "" {
		w, err := gang.ParseWeights(b.Weights)
		if err != nil {
			errs = append(errs, fmt.Errorf("--weights %q: %s", b.Weights, strings.TrimPrefix(err.Error(), "gang: ")))
		} else {
			out.Weights = &w
		}
	}
	for _, name := range []string{"reservations", "reservations-mode"} {
		if given(name) && !anyBF && policies != nil {
			errs = append(errs, fmt.Errorf("--%s applies only to the priority-backfill policies (%s); none is selected", name, bfNames))
		}
	}
	if given("weights") && !anyWeighted && policies != nil {
		errs = append(errs, errors.New("--weights applies only to fcfs-bf, priority-bf and lxfw-bf; none is selected"))
	}
	return out, errs
}

// backfillFor resolves the options for the one policy p of the runtime's
// controller: the zero value unless p is a priority-backfill policy (the
// core refuses options with any other).
func (b *backfillFlags) backfillFor(p gang.Policy, known bool, changed func(string) bool) (gang.Backfill, []error) {
	var policies []gang.Policy
	if known {
		policies = []gang.Policy{p}
	}
	bf, errs := b.parse(policies, changed)
	if !gang.IsPriorityBackfill(p) {
		bf = gang.Backfill{}
	}
	return bf, errs
}
