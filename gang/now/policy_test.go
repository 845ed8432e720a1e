package now

import (
	"slices"
	"strings"
	"testing"
)

// A --policy list: order kept, repeats and blanks dropped, any case; the
// first unknown name, or no name at all, is the error.
func TestParsePolicies(t *testing.T) {
	got, err := ParsePolicies("spt, FIFO,,spt")
	if want := []Policy{SPT, FIFO}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePolicies = %v, %v; want %v", got, err, want)
	}
	if _, err := ParsePolicies("fifo, sjf"); err == nil || !strings.Contains(err.Error(), `unknown policy "sjf" (valid: fifo,`) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := ParsePolicies("fifo, sjf,edf"); err == nil || !strings.Contains(err.Error(), `unknown policies "sjf", "edf" (valid: fifo,`) {
		t.Errorf("unknown policies: %v", err)
	}
	if _, err := ParsePolicies(","); err == nil || !strings.Contains(err.Error(), "no policy given (valid: fifo,") {
		t.Errorf("empty list: %v", err)
	}
}
