package version

import (
	"runtime"
	"strings"
	"testing"
)

// A release set at link time is the whole answer; otherwise the answer
// ends with the Go version the binary was built with.
func TestString(t *testing.T) {
	if got := String("v1.2.3"); got != "v1.2.3" {
		t.Errorf("String(v1.2.3) = %q", got)
	}
	if got := String(""); !strings.HasSuffix(got, " "+runtime.Version()) {
		t.Errorf("String(\"\") = %q, want it to end with %s", got, runtime.Version())
	}
}
