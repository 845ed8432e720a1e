// Package mpi is cosched's MPI library: C sources (src/), built by
// build.sh into lib/cosched/libmpich.so.12 (and libmpi.so.12) with
// MPICH's binary interface, so that programs compiled and linked by the
// system's MPICH (mpicc, libmpich.so.12) run unmodified on it, every
// message going through the agent's relay (comm/relay) over the rank
// protocol of comm/proto.go. The interface it must cover is abi/mpich-4.txt
// (abi/gen.sh lists it from the real library); what it does not implement
// fails the job naming the call. docs/mpi.md says what is supported.
//
// Fortran programs use MPICH's own Fortran bindings (libmpichfort.so.12),
// which call the C interface; the library answers the few internal calls
// they make besides (MPII_Comm_get_attr and its kin, src/attr.c).
//
// The Go side is only tests: the conformance programs in
// testdata/conformance (C and Fortran) run on N ranks against real relays
// started in the test (immediate and bcs delivery), and public programs
// (MPICH's cpi, NetPIPE) run unmodified. mpibuild builds the library and
// compiles programs for any package's tests.
package mpi
