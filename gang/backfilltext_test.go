package gang

import (
	"reflect"
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
)

// Text options parse to a Backfill (empty fields the defaults); every bad
// or unused one is named by its field, all at once.
func TestBackfillTextParse(t *testing.T) {
	all := func(string) bool { return true }
	b, err := BackfillText{Reservations: "inf", ReservationsMode: "fixed", Weights: "wx=1,ww=0.5"}.Parse([]Policy{PriorityBF}, all)
	if want := (Backfill{Reservations: UnlimitedReservations, Mode: Fixed, Weights: &Weights{Wait: 0.5, Expansion: 1}}); err != nil || !reflect.DeepEqual(b, want) {
		t.Errorf("parse %+v, %v; want %+v", b, err, want)
	}
	if b, err := (BackfillText{}).ParseFor(SJFBF, all); err != nil || b != (Backfill{Reservations: 1, Mode: Dynamic}) {
		t.Errorf("defaults %+v, %v", b, err)
	}
	if b, err := (BackfillText{Reservations: "3"}).ParseFor(EASY, nil); err != nil || b != (Backfill{}) {
		t.Errorf("not given, easy: %+v, %v", b, err)
	}
	for _, tc := range []struct {
		text     BackfillText
		policies []Policy
		want     []string
	}{
		{BackfillText{Reservations: "0", ReservationsMode: "sticky", Weights: "wq=1"}, []Policy{PriorityBF},
			[]string{`Reservations "0": want a count of at least 1, or inf`, `ReservationsMode "sticky": want dynamic or fixed`, `Weights "wq=1": unknown weight "wq"`}},
		{BackfillText{Reservations: "2", ReservationsMode: "fixed", Weights: "ww=1"}, []Policy{EASY, FCFS},
			[]string{"Reservations applies only to the priority-backfill policies (fcfs-bf, sjf-bf, priority-bf, lxfw-bf); none is selected",
				"ReservationsMode applies only to the priority-backfill", "Weights applies only to fcfs-bf, priority-bf and lxfw-bf; none is selected"}},
		{BackfillText{Weights: "ww=1"}, []Policy{SJFBF}, []string{"Weights applies only"}},
	} {
		_, err := tc.text.Parse(tc.policies, all)
		got := fielderr.All(err)
		if len(got) != len(tc.want) {
			t.Fatalf("%+v: %v, want %d problems", tc.text, err, len(tc.want))
		}
		for i, w := range tc.want {
			if msg := got[i].Error(); len(msg) < len(w) || msg[:len(w)] != w {
				t.Errorf("%+v: %q, want %q", tc.text, msg, w)
			}
		}
	}
}
