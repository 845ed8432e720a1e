// Package workload generates synthetic workloads for the time-sharing
// simulator after Jann, Pattnaik, Franke, Wang, Skovira and Riordan,
// "Modeling of workload in MPPs" (JSSPP 1997).
//
// # Model
//
// Jobs are grouped into size classes with power-of-two upper bounds
// (1 | 2 | 3–4 | 5–8 | 9–16 | …). Each class has its own arrival process, a
// renewal process whose interarrival times follow a hyper-Erlang
// distribution of common order (HyperErlang), a hyper-Erlang runtime
// distribution and the empirical distribution of its sizes. FitHyperErlang
// matches the first three moments of the data with two branches, taking
// the lowest order that fits, as the paper does; Fit builds a Model from a
// jss.Source such as a jss.SWFSource over a trace.
//
// # Built-in parameters
//
// Builtin returns parameters fitted by cosched's own Fit to the KTH-SP2 log
// of the Parallel Workloads Archive (KTH-SP2-1996-2.swf, a 100-processor
// IBM SP2 like the machine of the original study), not copied from the
// paper. They are embedded as builtin.json; a test re-fits the trace when
// ../shared/traces holds it and requires the embedded JSON to equal the
// fresh fit byte for byte. To regenerate it:
//
//	go test ./jss/workload -run TestBuiltin -update
//
// or equivalently `cosched sim fit --trace KTH-SP2-1996-2.swf >
// jss/workload/builtin.json`.
//
// # Generating
//
// A Generator (NewGenerator, Config) superposes the classes' arrival
// streams and scales the result: one factor τ on every time sets the mean
// runtime at load 1, and a factor Load/L0 on the runtimes sets the offered
// load (see Generator for the exact rules). It is a jss.Source, so the
// simulator can run it directly, and it is deterministic for a seed.
// WriteSWF stores a workload as an SWF file whose header lists the
// benchmark templates ("; Template: <k> <template>") and whose field 14
// points into that list; jss.ReadTemplates reads the list back.
package workload
