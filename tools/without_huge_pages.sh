#!/usr/bin/env bash
# without_huge_pages.sh COMMAND [ARGS...]: runs COMMAND with transparent huge pages off for it
# and every process it starts (prctl PR_SET_THP_DISABLE, which fork and exec inherit), as on a
# node whose kernel has them off or a job that turns them off: 4 KiB pages only. `.ci/run`
# runs the tests that judge RSS so once (docs/memory-model.md "Pages"). /proc/PID/status then
# says "THP_enabled: 0".
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
exec /usr/bin/python3 -c '
import ctypes, os, sys
PR_SET_THP_DISABLE = 41
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
    sys.exit("without_huge_pages.sh: prctl(PR_SET_THP_DISABLE): "
             + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
' "$@"
