package cli

import (
	"reflect"
	"testing"
)

// cluster up passes the options that were given on to the controller.
func TestBackfillArgs(t *testing.T) {
	b := BackfillFlags{Reservations: "2", ReservationsMode: "dynamic", Weights: ""}
	got := b.args(func(name string) bool { return name != "reservations-mode" })
	if want := []string{"--reservations", "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
}
