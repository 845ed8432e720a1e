package bench

import (
	"fmt"
	"strings"
	"time"
)

// Workload is a named mix of templates; jobs draw one of them with equal
// probability.
type Workload struct {
	Name      string
	Templates []Template
}

func tpl(g, v int, p Pattern, s Sync) Template {
	return Template{Grain: time.Duration(g) * time.Millisecond, Imbalance: time.Duration(v) * time.Millisecond, Pattern: p, Sync: s}
}

// Workloads returns the five named workloads of the buffered-coscheduling
// study (g and v in milliseconds):
//
//	w0  ⟨50,25,transpose,B⟩  ⟨100,50,transpose,B⟩  ⟨200,100,transpose,B⟩
//	w1  the same with NB
//	w2  ⟨50,25,news,B⟩       ⟨100,50,news,B⟩       ⟨100,100,news,B⟩
//	w3  ⟨50,25,news,NB⟩      ⟨100,50,news,NB⟩      ⟨200,100,news,NB⟩
//	w4  ⟨50,25,barrier,NB⟩   ⟨100,50,barrier,NB⟩   ⟨200,100,barrier,NB⟩
func Workloads() []Workload {
	return []Workload{
		{"w0", []Template{tpl(50, 25, Transpose, Blocking), tpl(100, 50, Transpose, Blocking), tpl(200, 100, Transpose, Blocking)}},
		{"w1", []Template{tpl(50, 25, Transpose, NonBlocking), tpl(100, 50, Transpose, NonBlocking), tpl(200, 100, Transpose, NonBlocking)}},
		{"w2", []Template{tpl(50, 25, News, Blocking), tpl(100, 50, News, Blocking), tpl(100, 100, News, Blocking)}},
		{"w3", []Template{tpl(50, 25, News, NonBlocking), tpl(100, 50, News, NonBlocking), tpl(200, 100, News, NonBlocking)}},
		{"w4", []Template{tpl(50, 25, Barrier, NonBlocking), tpl(100, 50, Barrier, NonBlocking), tpl(200, 100, Barrier, NonBlocking)}},
	}
}

// LookupWorkload returns the named workload; the error lists the valid names.
func LookupWorkload(name string) (Workload, error) {
	for _, w := range Workloads() {
		if strings.EqualFold(w.Name, name) {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("bench: unknown workload %q (valid: %s)", name, WorkloadNames())
}

// WorkloadNames lists the named workloads, comma-separated, for help and
// errors.
func WorkloadNames() string {
	var names []string
	for _, w := range Workloads() {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}
