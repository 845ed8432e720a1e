package closed

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Policy is a gang scheduling policy of the processor queues.
type Policy string

// The policies (see the package documentation for their rules).
const (
	FCFS  Policy = "fcfs"
	AFCFS Policy = "afcfs"
	LJFS  Policy = "ljfs"
)

// Policies lists the policies in their documented order.
func Policies() []Policy { return []Policy{FCFS, AFCFS, LJFS} }

// PolicyNames lists the policies' names, comma-separated.
func PolicyNames() string {
	var names []string
	for _, p := range Policies() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// ParsePolicy resolves a policy name (case and surrounding blanks ignored;
// "a-fcfs" is accepted for afcfs).
func ParsePolicy(name string) (Policy, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "a-fcfs" {
		n = string(AFCFS)
	}
	if slices.Contains(Policies(), Policy(n)) {
		return Policy(n), nil
	}
	return "", fmt.Errorf("closed: unknown policy %q (valid: %s)", name, PolicyNames())
}

// Waiting is a job in the processor queues: the processors its tasks were
// sent to, one task each. Its size is len(Procs).
type Waiting struct {
	Procs []int
}

// Start runs one scheduling pass. busy[q] tells whether processor q is
// running a task; waiting lists the queued jobs in order of arrival at the
// processor queues, oldest first. Start returns the indexes into waiting of
// the jobs that start now, in the order they were chosen; it reads its
// arguments and changes neither.
//
//   - FCFS: a processor's queue holds its tasks in order of arrival; a job
//     starts if each of its tasks is first in its queue and each of its
//     processors is idle. (A job that starts makes its processors busy, so
//     nothing behind it can start in the same pass.)
//   - AFCFS: jobs are examined oldest first; a job starts if all its
//     processors are idle (including those taken by jobs started earlier in
//     the pass), wherever its tasks sit in their queues.
//   - LJFS: as AFCFS, examining the jobs largest first, ties oldest first
//     (the order of an LJFS queue).
func (p Policy) Start(busy []bool, waiting []Waiting) []int {
	order := make([]int, len(waiting))
	for i := range order {
		order[i] = i
	}
	if p == LJFS {
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(len(waiting[b].Procs), len(waiting[a].Procs))
		})
	}
	free := func(procs []int, taken []bool) bool {
		for _, q := range procs {
			if busy[q] || taken[q] {
				return false
			}
		}
		return true
	}
	taken := make([]bool, len(busy))
	var started []int
	switch p {
	case FCFS:
		head := make([]int, len(busy)) // the first queued job of each processor, -1 if none
		for q := range head {
			head[q] = -1
		}
		for _, j := range order {
			for _, q := range waiting[j].Procs {
				if head[q] < 0 {
					head[q] = j
				}
			}
		}
		for _, j := range order {
			first := true
			for _, q := range waiting[j].Procs {
				first = first && head[q] == j
			}
			if first && free(waiting[j].Procs, taken) {
				started = append(started, j)
			}
		}
	default:
		for _, j := range order {
			if free(waiting[j].Procs, taken) {
				for _, q := range waiting[j].Procs {
					taken[q] = true
				}
				started = append(started, j)
			}
		}
	}
	return started
}

// Ties says how Assign breaks ties between processors with equally long
// queues.
type Ties int

const (
	// TiesRandom prefers processors in an order drawn afresh for every job
	// (Karatza's model: the processors are interchangeable).
	TiesRandom Ties = iota
	// TiesLowest prefers the lowest-numbered processor (for schedules worked
	// out by hand).
	TiesLowest
)

// Assign chooses the size processors with the fewest tasks: queueLen[q]
// counts processor q's tasks, queued and in service. Ties go to the
// processor that comes first in prefer, a permutation of the processors (nil
// means lowest index first). The result is sorted by processor number.
func Assign(queueLen []int, size int, prefer []int) []int {
	cand := prefer
	if cand == nil {
		cand = make([]int, len(queueLen))
		for q := range cand {
			cand[q] = q
		}
	} else {
		cand = slices.Clone(cand)
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(queueLen[a], queueLen[b]) })
	out := slices.Clone(cand[:size])
	slices.Sort(out)
	return out
}
