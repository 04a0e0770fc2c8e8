"""Run one command and measure the CPU time and memory of its whole process tree.

    python benchmarks/_e2e_measure.py OUT.json -- CMD [ARGS...]

datatrove's ``LocalPipelineExecutor`` starts its workers from a multiprocessing forkserver, which is
not waited by the command's own process, so ``/usr/bin/time`` misses their CPU. This wrapper makes
itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): every orphaned descendant is
re-parented to it and reaped by it, so ``getrusage(RUSAGE_CHILDREN)`` at the end holds the user and
system CPU of every process the command started, however deep. Memory: the largest single-process
peak (``ru_maxrss`` over reaped descendants, exact) and the peak of the summed RSS of the tree
(sampled every 0.2 s with psutil). Written as JSON: ``cpu_s``, ``user_s``, ``sys_s``, ``wall_s``,
``max_proc_rss_mib``, ``peak_tree_rss_mib``, ``rc``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _tree_rss(root) -> int:
    import psutil

    total = 0
    try:
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(cmd: list[str], *, env: dict | None = None, cwd: str | None = None, interval: float = 0.2,
            stdout=None, stderr=None) -> dict:
    """Run ``cmd`` (this process must be a subreaper, see ``main``) and return the measures."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
    me = psutil.Process()
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(me) - me.memory_info().rss)
        time.sleep(interval)
    # orphans (forkserver, its workers) were re-parented here: wait until every one has exited
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "rc": proc.returncode,
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "user_s": round(ru.ru_utime, 3),
        "sys_s": round(ru.ru_stime, 3),
        "wall_s": round(wall, 3),
        "max_proc_rss_mib": round(ru.ru_maxrss / 1024, 1),
        "peak_tree_rss_mib": round(peak / 2**20, 1),
    }


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    out, cmd = argv[0], argv[2:]
    res = measure(cmd)
    res["subreaper"] = SUBREAPER
    with open(out, "w") as fh:
        json.dump(res, fh)
    return 0 if res["rc"] == 0 else 1


SUBREAPER = False

if __name__ == "__main__":
    SUBREAPER = _become_subreaper()
    sys.exit(main(sys.argv[1:]))
