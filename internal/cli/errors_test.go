package cli

import (
	"strings"
	"testing"
)

func TestUserMessageStripsPackagePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"policy easy: jss: gang: invalid config: MPL must be from 1 to 64, got 0": "policy easy: invalid config: MPL must be from 1 to 64, got 0",
		"swf: read x.gz: unexpected EOF":                                          "read x.gz: unexpected EOF",
		"--workload jss":                                                          "--workload jss",
		"node: jss":                                                               "jss",
	} {
		if got := userMessage(errString(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestVersion(t *testing.T) {
	code, out, _ := cosched(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "cosched ") || !strings.Contains(out, "go1.") {
		t.Errorf("exit %d: %q", code, out)
	}
}
