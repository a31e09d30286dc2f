#!/bin/sh
# Stands in for nvcc: writes its arguments to $FAKE_NVCC_ARGS and creates
# the -o file empty, so that a test can see what tdslc asked nvcc to do.
echo "$@" > "$FAKE_NVCC_ARGS"
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then : > "$2"; fi
  shift
done
