package sweep

import (
	"fmt"
	"time"

	"github.com/cosched/cosched/sharing"
)

// PFCFSInfo records policy pfcfs's parameters in results files.
type PFCFSInfo struct {
	WidePercent float64       `json:"wide_percent"`
	Delay       time.Duration `json:"delay_ns"`
	Switch      time.Duration `json:"switch_ns"`
	Switches    int           `json:"switches"`
	Penalty     time.Duration `json:"penalty_ns"`
}

// pfcfsInfo describes m's pfcfs parameters, or nil when none are set.
func (m Machine) pfcfsInfo() *PFCFSInfo {
	p := m.PFCFS
	if p.Scheduler.Switches == 0 && p.Scheduler.WidePercent == 0 && p.Scheduler.Switch == 0 {
		return nil
	}
	return &PFCFSInfo{
		WidePercent: p.Scheduler.WidePercent,
		Delay:       p.Scheduler.Delay,
		Switch:      p.Scheduler.Switch,
		Switches:    p.Scheduler.Switches,
		Penalty:     p.Penalty,
	}
}

func pfcfsModes(modes []sharing.Mode) []error {
	var errs []error
	for _, m := range modes {
		if m != sharing.Space {
			errs = append(errs, fmt.Errorf("policy pfcfs is space sharing: it runs in mode space, not %s", m))
		}
	}
	return errs
}
