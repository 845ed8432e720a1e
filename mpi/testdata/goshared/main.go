// Command goshared is the floor of an MPI library written in Go
// (-buildmode=c-shared): MPI_Init and MPI_Finalize that do nothing, so
// that BenchmarkRankStart measures what the Go runtime alone costs a
// rank (its start, its threads, its memory) beside cosched's C library
// and MPICH. Built only by that benchmark.
package main

import "C"

//export MPI_Init
func MPI_Init(argc *C.int, argv ***C.char) C.int { return 0 }

//export MPI_Finalize
func MPI_Finalize() C.int { return 0 }

func main() {}
