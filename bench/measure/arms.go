package measure

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/sharing"
)

// Arm is one configuration a run compares: a mode at its own slice and
// MPL, or (zero) at the run's.
type Arm struct {
	Mode  sharing.Mode
	Slice time.Duration // 0: the run's
	MPL   int           // 0: the run's
}

// Label names an arm with settings of its own ("bcs-2ms",
// "gang-10ms-mpl3"); "" for the mode at the run's settings.
func (a Arm) Label() string {
	if a.Slice == 0 && a.MPL == 0 {
		return ""
	}
	s := string(a.Mode)
	if a.Slice > 0 {
		s += "-" + a.Slice.String()
	}
	if a.MPL > 0 {
		s += "-mpl" + strconv.Itoa(a.MPL)
	}
	return s
}

// Own reports whether the arm has a slice or MPL of its own.
func (a Arm) Own() bool { return a.Slice != 0 || a.MPL != 0 }

// ParseArms reads --mode: a comma-separated list of MODE[:SLICE[:MPL]]
// ("bcs:2ms,bcs:50ms,gang:10ms:3,space"). A mode it does not know is kept
// as written, for Validate to refuse with every other problem; a slice or
// MPL it cannot read is an error.
func ParseArms(s string) ([]Arm, error) {
	var arms []Arm
	for _, item := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) > 3 {
			return nil, fmt.Errorf("%q: want MODE, MODE:SLICE or MODE:SLICE:MPL", item)
		}
		m, err := sharing.Parse(parts[0])
		if err != nil {
			m = sharing.Mode(parts[0])
		}
		a := Arm{Mode: m}
		if len(parts) > 1 && parts[1] != "" {
			if a.Slice, err = time.ParseDuration(parts[1]); err != nil || a.Slice <= 0 {
				return nil, fmt.Errorf("%q: slice %q is not a duration such as 5ms", item, parts[1])
			}
		}
		if len(parts) > 2 {
			if a.MPL, err = strconv.Atoi(parts[2]); err != nil || a.MPL < 1 {
				return nil, fmt.Errorf("%q: MPL %q is not a number from 1", item, parts[2])
			}
		}
		if m == sharing.Space && a.Own() {
			return nil, fmt.Errorf("%q: space sharing has no slice or MPL", item)
		}
		arms = append(arms, a)
	}
	return arms, nil
}

// ModesOf returns the arms' modes, in order.
func ModesOf(arms []Arm) []sharing.Mode {
	out := make([]sharing.Mode, len(arms))
	for i, a := range arms {
		out[i] = a.Mode
	}
	return out
}

// arms are o's arms: Arms, or each of Modes at the run's settings.
func (o RunOptions) arms() []Arm {
	if len(o.Arms) > 0 {
		return o.Arms
	}
	out := make([]Arm, len(o.Modes))
	for i, m := range o.Modes {
		out[i] = Arm{Mode: m}
	}
	return out
}

// armText is how progress lines and errors name an arm.
func armText(a Arm) string {
	if l := a.Label(); l != "" {
		return l
	}
	return string(a.Mode)
}

// armsText lists arms as --mode writes them.
func armsText(arms []Arm) string {
	s := make([]string, len(arms))
	for i, a := range arms {
		s[i] = string(a.Mode)
		if a.Slice > 0 {
			s[i] += ":" + a.Slice.String()
		}
		if a.MPL > 0 {
			s[i] += ":" + strconv.Itoa(a.MPL)
		}
	}
	return strings.Join(s, ",")
}
