package cli

import (
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/flagkeys"
)

// BackfillFlags are the options of the priority-backfill policies
// (fcfs-bf, sjf-bf, priority-bf, lxfw-bf), shared by cosched sim, cosched
// agent (where a --config file may set them too: the TOML keys are the
// tags) and cosched cluster up. An empty value means the default.
type BackfillFlags gang.BackfillText

// backfillFlagNames maps gang.BackfillText's fields to the flags, found
// by reflection on first use, not in every CLI call's initialisation.
var backfillFlagNames = sync.OnceValue(func() FlagNames { return FlagNames(flagkeys.Names(gang.BackfillText{})) })

// add defines the flags; scope, when not empty, prefixes their help (e.g.
// "controller, ").
func (b *BackfillFlags) Add(fl *pflag.FlagSet, scope string) {
	fl.StringVar(&b.Reservations, "reservations", "1", scope+"priority-backfill policies: how many queued jobs hold a reservation (N), or inf for every one")
	fl.StringVar(&b.ReservationsMode, "reservations-mode", string(gang.Dynamic), scope+"priority-backfill policies: dynamic (the current top N, recomputed every pass) or fixed (a job keeps its reservation once given)")
	fl.StringVar(&b.Weights, "weights", "", scope+"fcfs-bf, priority-bf, lxfw-bf: priority weights replacing the preset's, e.g. ww=1,wx=5,wp=0.2,wm=0 (wait hours, expansion, processors, memory share)")
}

// args returns the options that were given (changed and not empty) as
// command-line arguments, to pass them on to another cosched command.
func (b *BackfillFlags) args(changed func(string) bool) []string {
	var out []string
	for _, o := range []struct{ name, val string }{{"reservations", b.Reservations}, {"reservations-mode", b.ReservationsMode}, {"weights", b.Weights}} {
		if o.val != "" && changed(o.name) {
			out = append(out, "--"+o.name, o.val)
		}
	}
	return out
}

// parse resolves the options for the chosen policies (gang.BackfillText's
// Parse); changed tells whether a flag was given (on the command line or
// in a config file). Every problem names its flag.
func (b *BackfillFlags) parse(policies []gang.Policy, changed func(string) bool) (gang.Backfill, []error) {
	bf, err := gang.BackfillText(*b).Parse(policies, backfillFlagNames().Given(changed))
	return bf, backfillFlagNames().List(err)
}

// Given is changed, a test of whether a flag was given, as a test of
// whether a library field was set, by the field's flag.
func (names FlagNames) Given(changed func(flag string) bool) func(field string) bool {
	if changed == nil {
		return nil
	}
	return func(field string) bool { return changed(strings.TrimLeft(names.Flag(field), "-")) }
}
