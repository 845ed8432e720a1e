// Package measure measures the runtime on this machine with local clusters
// of agents (package localcluster): the strobe benchmark (Strobe: switch
// skew, latency and overhead), the calibration probes that make a machine
// profile for the simulator (Calibrate, and Probe, the probe jobs' rank
// program), and the per-mode runs of a benchmark workload compared with
// the simulator, on local clusters or an existing one (Run, RunModes,
// OnCluster). `cosched bench strobe`, `bench calibrate`, `bench run` and
// the hidden `bench-probe` are thin layers over it.
package measure
