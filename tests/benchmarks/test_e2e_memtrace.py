"""benchmarks/_e2e_memtrace.py: names the process that set a run's peak memory, even an orphaned grandchild
(as a forkserver's workers are), with the peak's size and where that memory lay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the command: a parent that starts a grandchild and exits at once (the grandchild is orphaned, as datatrove's
# forkserver workers are); the grandchild holds 80 MiB of touched memory for a while, the parent about nothing
CHILD = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    if os.fork() == 0:\n"
    "        sys.argv[0] = 'big'\n"
    "        b = bytearray(80 << 20)\n"
    "        for i in range(0, len(b), 4096): b[i] = 1\n"
    "        time.sleep(0.6)\n"
    "        os._exit(0)\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "time.sleep(1.0)\n"
)


def test_the_orphaned_grandchild_that_holds_the_memory_is_named_with_its_peak(tmp_path):
    out = tmp_path / "trace.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "_e2e_memtrace.py"), str(out), "--interval", "0.02",
                           "--", sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["max_proc_rss_mib"] >= 80
    procs = sorted(res["procs"], key=lambda p: p["hwm_mib"])
    biggest = procs[-1]
    assert biggest["hwm_mib"] >= 80
    assert len(procs) >= 2 and procs[0]["hwm_mib"] < 40  # the parents are small and told apart
    # at its high, the memory lay in anonymous memory (the bytearray is one mmapped buffer)
    mappings = dict(biggest["high"]["mappings"])
    assert mappings.get("anon", 0) + mappings.get("[heap]", 0) >= 70
    assert any(f"peak {biggest['hwm_mib']:4d} MiB" in line for line in proc.stdout.splitlines())
