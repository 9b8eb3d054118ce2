#!/bin/sh
# mpirun for the MPI ctest entries: skipped (status 77) where Open MPI's launcher is not installed;
# allowed to run as root (CI's containers); more ranks than cores allowed (--oversubscribe).
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipping (apt install openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under scripts/test-sanitizers.sh: Open MPI's plugins allocate without freeing and are unloaded at
# MPI_Finalize, before LeakSanitizer looks, so their leaks cannot be suppressed by name. Leak checking
# is off for MPI processes only (a later option wins); the other ASan and UBSan checks stay on.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
# Each launch gets a session directory of its own. Launches run side by side (ctest -j, pytest beside
# it) and by default share /tmp/ompi.<host>.<uid>: one ending removes it while another creates its
# own under it, and that one fails to start ("orte_session_dir failed", seen once in ~60 launches).
session=$(mktemp -d "${TMPDIR:-/tmp}/wl-mpirun.XXXXXX") || exit 1
OMPI_MCA_orte_tmpdir_base=$session mpirun --oversubscribe "$@"
status=$?
rm -rf "$session"
exit $status
