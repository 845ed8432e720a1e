package jss

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/jss/swf"
)

// The runtime-estimate scenarios of the NCSA Origin 2000 study (Chiang),
// beside EstimateRequested and EstimateExact:
//
//	actual      the runtime (EstimateExact under another name)
//	actual+K%   the runtime × (1 + K/100), K ≥ 0 (e.g. actual+20%)
//	abort       premature abort: the runtime for a job that completed
//	            (SWF status 1, or unknown), the requested time (field 9,
//	            else the runtime) for one that failed (0) or was cancelled
//	            (5): no one, user or scheduler, foresees an abort, so such
//	            a job is planned for its whole request.
const (
	EstimateActual EstimateFrom = "actual"
	EstimateAbort  EstimateFrom = "abort"
)

// estimateRule is a parsed EstimateFrom.
type estimateRule struct {
	kind    EstimateFrom // EstimateRequested, EstimateExact, EstimateAbort
	percent float64      // actual+K%: K
}

// ParseEstimate checks an estimate convention: requested, exact, actual,
// actual+K% or abort.
func ParseEstimate(text string) (EstimateFrom, error) {
	e := EstimateFrom(strings.ToLower(strings.TrimSpace(text)))
	if _, err := e.rule(); err != nil {
		return "", err
	}
	return e, nil
}

func (e EstimateFrom) rule() (estimateRule, error) {
	switch e {
	case EstimateRequested, EstimateExact, EstimateAbort:
		return estimateRule{kind: e}, nil
	case EstimateActual:
		return estimateRule{kind: EstimateExact}, nil
	}
	if rest, ok := strings.CutPrefix(string(e), "actual+"); ok {
		if num, ok := strings.CutSuffix(rest, "%"); ok {
			k, err := strconv.ParseFloat(num, 64)
			if err == nil && k >= 0 && !math.IsInf(k, 0) {
				return estimateRule{kind: EstimateExact, percent: k}, nil
			}
		}
	}
	return estimateRule{}, fmt.Errorf("estimate convention %q: want requested, exact (or actual), actual+K%% (K ≥ 0, e.g. actual+20%%) or abort", string(e))
}

// estimate returns a job's estimate under the rule, given its runtime.
func (r estimateRule) estimate(rec *swf.Record, runtime time.Duration) time.Duration {
	requested := func() time.Duration {
		if rec.RequestedTime >= 0 {
			return seconds(rec.RequestedTime)
		}
		return runtime
	}
	switch r.kind {
	case EstimateRequested:
		return requested()
	case EstimateAbort:
		if rec.Status == 0 || rec.Status == 5 {
			return requested()
		}
		return runtime
	}
	if r.percent > 0 {
		return time.Duration(math.Round(float64(runtime) * (1 + r.percent/100)))
	}
	return runtime
}
