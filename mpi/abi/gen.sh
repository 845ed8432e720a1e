#!/bin/sh
# Lists the symbols a program linked against MPICH's libmpich.so.12 may
# need: every function and data object the real library exports
# (nm -D), one "T NAME" (function) or "D NAME" (data) a line, sorted. The
# build gives every function on the list that cosched's library does not
# implement a stub that fails the job naming it (mpi/build.sh).
#
#   sh mpi/abi/gen.sh [/path/to/libmpich.so.12] > mpi/abi/mpich-4.txt
set -eu
lib=${1:-$(readlink -f /usr/lib/x86_64-linux-gnu/libmpich.so.12)}
nm -D --defined-only "$lib" | awk '
	$3 ~ /^MPII_Version_/ { next }          # build strings, not part of the interface
	$2 ~ /^[TW]$/ { print "T " $3; next }
	$2 ~ /^[BDR]$/ { print "D " $3 }
' | sort -u
