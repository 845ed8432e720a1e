package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cosched/cosched/gang"
)

// backfillFlags are the options of the priority-backfill policies
// (fcfs-bf, sjf-bf, priority-bf, lxfw-bf).
type backfillFlags struct {
	reservations string
	mode         string
	weights      string
}

func (b *backfillFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&b.reservations, "reservations", "1", "priority-backfill policies: how many queued jobs hold a reservation (N), or inf for every one")
	fl.StringVar(&b.mode, "reservations-mode", string(gang.Dynamic), "priority-backfill policies: dynamic (the current top N, recomputed every pass) or fixed (a job keeps its reservation once given)")
	fl.StringVar(&b.weights, "weights", "", "fcfs-bf, priority-bf, lxfw-bf: priority weights replacing the preset's, e.g. ww=1,wx=5,wp=0.2,wm=0 (wait hours, expansion, processors, memory share)")
}

// parse resolves the options for the chosen policies; changed tells
// whether a flag was given on the command line. Every problem names its
// flag.
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
	bfNames := strings.Join([]string{string(gang.FCFSBF), string(gang.SJFBF), string(gang.PriorityBF), string(gang.LXFWBF)}, ", ")
	if n, err := gang.ParseReservations(b.reservations); err != nil {
		errs = append(errs, fmt.Errorf("--reservations %q: want a count of at least 1, or inf", b.reservations))
	} else {
		out.Reservations = n
	}
	if m, err := gang.ParseReservationMode(b.mode); err != nil {
		errs = append(errs, fmt.Errorf("--reservations-mode %q: want dynamic or fixed", b.mode))
	} else {
		out.Mode = m
	}
	if b.weights != "" {
		w, err := gang.ParseWeights(b.weights)
		if err != nil {
			errs = append(errs, fmt.Errorf("--weights %q: %s", b.weights, strings.TrimPrefix(err.Error(), "gang: ")))
		} else {
			out.Weights = &w
		}
	}
	for _, name := range []string{"reservations", "reservations-mode"} {
		if changed(name) && !anyBF && policies != nil {
			errs = append(errs, fmt.Errorf("--%s applies only to the priority-backfill policies (%s); none is selected", name, bfNames))
		}
	}
	if changed("weights") && !anyWeighted && policies != nil {
		errs = append(errs, errors.New("--weights applies only to fcfs-bf, priority-bf and lxfw-bf; none is selected"))
	}
	return out, errs
}
