#!/bin/sh
# Builds cosched's PMIx helper into DIR/cosched-pmix: one job's PMIx
# server on one node (--mpi pmix, for Open MPI programs), a small C
# program on OpenPMIx's server library that the agent starts per job and
# node (package pmix, docs/mpi.md).
#
#   sh pmix/build.sh DIR
#
# Exit status 3: gcc or OpenPMIx's headers (libpmix-dev) are missing
# (nothing built; the Makefile goes on without the helper, and the agent
# fails --mpi pmix jobs naming where it looked). CC overrides.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh DIR}
cc=${CC:-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "pmix/build.sh: no $cc: cosched's PMIx helper (--mpi pmix) not built" >&2
	exit 3
fi
if ! flags=$(pkg-config --cflags --libs pmix 2>/dev/null); then
	echo "pmix/build.sh: OpenPMIx not found by pkg-config (apt-get install libpmix-dev): cosched's PMIx helper (--mpi pmix) not built" >&2
	exit 3
fi
mkdir -p "$out"
# shellcheck disable=SC2086 # flags is a list
"$cc" -O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -pthread -o "$out/cosched-pmix.tmp" "$here/server/cosched-pmix.c" $flags
mv "$out/cosched-pmix.tmp" "$out/cosched-pmix"
