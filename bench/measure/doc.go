// Package measure measures the runtime on this machine with local clusters
// of agents (package localcluster): the strobe benchmark (Strobe: switch
// skew, latency and overhead), the calibration probes that make a machine
// profile for the simulator (Calibrate, and Probe, the probe jobs' rank
// program), and the per-mode runs of a benchmark workload that bench run
// compares with the simulator (RunModes). `cosched bench strobe`,
// `bench calibrate`, `bench run` and the hidden `bench-probe` are thin
// layers over it.
package measure
