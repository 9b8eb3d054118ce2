#!/bin/sh
# mpirun for the MPI ctest entries: skipped (status 77) where Open MPI's launcher is not installed;
# allowed to run as root (CI's containers); more ranks than cores allowed (--oversubscribe).
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipping (apt install openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun --oversubscribe "$@"
