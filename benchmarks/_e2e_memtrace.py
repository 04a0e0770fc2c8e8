"""Which process sets a run's peak memory, and when: per-process resident memory over time.

    python benchmarks/_e2e_memtrace.py OUT.json -- CMD [ARGS...]

``_e2e_measure.py`` gives the largest single-process peak (``max_proc_rss_mib``) but not whose it is. This
wrapper runs the command as a child subreaper (like ``_e2e_measure``: the forkserver and its workers are
re-parented here and stay visible), polls ``/proc`` every ``--interval`` seconds (default 0.025) and records, per
descendant process: its command line, start and end (seconds from the start), ``VmHWM`` (the kernel's exact peak
resident memory of the process, read at each poll, so a peak is never missed, only its time is as coarse as the
poll), the time the peak was reached, its resident memory over time (changes only) and, each time its resident
memory passes its previous high by more than 1 MiB, where that memory lies (``/proc/PID/smaps`` ``Rss`` summed by
mapping: ``[heap]``, ``anon`` (pymalloc arenas, mmapped buffers), each shared library and mapped file).

Prints the processes above ``--min-mib`` (default 60), largest last, with their top mappings at their high;
OUT.json holds everything. Sampling /proc costs CPU of its own: use it to find the peak, not for CPU figures.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _descendants(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
                parent[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out = []
    for pid in parent:
        q = pid
        for _ in range(32):
            q = parent.get(q)
            if q is None:
                break
            if q == root:
                out.append(pid)
                break
    return out


def smaps_by_mapping(pid: int, top: int = 12) -> list[tuple[str, float]]:
    """Resident MiB of a process by mapping (``[heap]``, ``anon``, a library's file name), largest first."""
    cats: dict[str, int] = {}
    cur = "?"
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                if "-" in parts[0] and ":" not in parts[0] and len(parts) >= 5:
                    path = parts[5] if len(parts) > 5 else ""
                    cur = "anon" if not path else path if path.startswith("[") else path.rsplit("/", 1)[-1]
                elif parts[0] == "Rss:":
                    cats[cur] = cats.get(cur, 0) + int(parts[1])
    except OSError:
        return []
    return [(k, round(v / 1024, 1)) for k, v in sorted(cats.items(), key=lambda kv: -kv[1])[:top] if v >= 512]


def _status(pid: int) -> tuple[int, int, int] | None:
    """(VmRSS KiB, VmHWM KiB, PPid) of a process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0]), int(fields["PPid"])
    except (OSError, KeyError, ValueError):
        return None


def trace(cmd: list[str], interval: float = 0.025) -> dict:
    """Run ``cmd`` (this process should be a subreaper, see ``main``) and return the per-process record."""
    t0 = time.time()
    proc = subprocess.Popen(cmd)
    me = os.getpid()
    seen: dict[int, dict] = {}

    def poll() -> None:
        t = round(time.time() - t0, 3)
        for pid in _descendants(me):
            st = _status(pid)
            if st is None:
                continue
            rss, hwm, ppid = (st[0] >> 10, st[1] >> 10, st[2])
            info = seen.get(pid)
            if info is None:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
                except OSError:
                    continue
                info = seen[pid] = {"pid": pid, "ppid": ppid, "cmd": cmdline, "start_s": t, "rss_mib": [],
                                    "hwm_mib": 0, "hwm_at_s": t, "high": None}
            info["end_s"] = t
            if hwm > info["hwm_mib"]:
                info["hwm_mib"], info["hwm_at_s"] = hwm, t
            if not info["rss_mib"] or info["rss_mib"][-1][1] != rss:
                info["rss_mib"].append((t, rss))
            if info["high"] is None or rss > info["high"]["rss_mib"] + 1:
                info["high"] = {"at_s": t, "rss_mib": rss, "mappings": smaps_by_mapping(pid)}

    while proc.poll() is None:
        poll()
        time.sleep(interval)
    while True:  # re-parented orphans (forkserver, workers): reap them all
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rc": proc.returncode, "wall_s": round(time.time() - t0, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "max_proc_rss_mib": round(ru.ru_maxrss / 1024, 1),
            "procs": sorted(seen.values(), key=lambda p: p["start_s"])}


def report(res: dict, min_mib: int = 60) -> list[str]:
    lines = []
    for p in sorted((p for p in res["procs"] if p["hwm_mib"] >= min_mib), key=lambda p: p["hwm_mib"]):
        lines.append(f"pid {p['pid']:7d} ppid {p['ppid']:7d} {p['start_s']:7.1f}-{p['end_s']:7.1f}s  "
                     f"peak {p['hwm_mib']:4d} MiB at {p['hwm_at_s']:7.1f}s  {p['cmd'][:80]}")
        if p["high"]:
            top = ", ".join(f"{k} {v}" for k, v in p["high"]["mappings"][:8])
            lines.append(f"    at its high ({p['high']['rss_mib']} MiB, {p['high']['at_s']:.1f}s): {top}")
    lines.append(f"max_proc_rss_mib {res['max_proc_rss_mib']}  cpu_s {res['cpu_s']}  wall_s {res['wall_s']}  rc {res['rc']}")
    return lines


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    i = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--interval", type=float, default=0.025)
    ap.add_argument("--min-mib", type=int, default=60)
    args = ap.parse_args(argv[:i])
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    res = trace(argv[i + 1:], args.interval)
    with open(args.out, "w") as f:
        json.dump(res, f)
    print("\n".join(report(res, args.min_mib)))
    return 0 if res["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
