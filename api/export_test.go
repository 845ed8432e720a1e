package api

import (
	"slices"
	"strings"
	"testing"
)

func TestExportEnv(t *testing.T) {
	environ := []string{"HOME=/home/a", "PATH=/opt/bin:/usr/bin", "OMP_NUM_THREADS=4", "COSCHED_RANK=3", "PMI_FD=5", "EMPTY="}
	for _, tc := range []struct {
		spec, want, err string
	}{
		{spec: "NONE", want: ""},
		{spec: "ALL", want: "HOME=/home/a PATH=/opt/bin:/usr/bin OMP_NUM_THREADS=4 EMPTY="},
		{spec: "OMP_NUM_THREADS", want: "OMP_NUM_THREADS=4"},
		{spec: "OMP_NUM_THREADS,UNSET,EDITOR=vi", want: "OMP_NUM_THREADS=4 EDITOR=vi"},
		{spec: "NONE,EDITOR=vi", want: "EDITOR=vi"},
		{spec: "ALL,OMP_NUM_THREADS=8", want: "HOME=/home/a PATH=/opt/bin:/usr/bin OMP_NUM_THREADS=4 EMPTY= OMP_NUM_THREADS=8"},
		{spec: "COSCHED_RANK", want: "COSCHED_RANK=3"}, // named: the user asked (the agent's value wins anyway)
		{spec: "A,,B", err: `"": want ALL`},
		{spec: "=x", err: `"=x": want ALL`},
		{spec: "EDITOR,ALL", err: "ALL: give it first"},
		{spec: "", err: `"": want ALL`},
	} {
		env, err := ExportEnv(tc.spec, environ)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("--export=%s: %v %v, want error %q", tc.spec, env, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(env, " ") != tc.want {
			t.Errorf("--export=%s: %q %v, want %q", tc.spec, env, err, tc.want)
		}
	}
	big := slices.Repeat([]string{"X=" + strings.Repeat("x", 1000)}, 200)
	if _, err := ExportEnv("ALL", big); err == nil || !strings.Contains(err.Error(), "more than a job may carry") {
		t.Errorf("200 KB of environment: %v", err)
	}
}
