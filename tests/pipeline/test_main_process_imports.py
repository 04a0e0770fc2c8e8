"""What the processes of ``assay run`` no longer pay for: datatrove's per-step dependency check parsing every
installed package's metadata (``assay/_depcheck.py``). Each probe runs in a fresh interpreter (imports are per
process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


# ------------------------------------------------------------------------------------ dependency check


def test_dependency_check_gives_datatrove_answers_reading_one_metadata_file():
    out = _run("""
        import importlib.metadata as im, json
        import assay.stages  # installs the fast check
        from datatrove.utils import _import_utils as iu
        fast = iu._is_distribution_available
        original = fast._assay_original  # datatrove's own function, unwrapped
        reads = []
        real = im.PathDistribution.read_text
        im.PathDistribution.read_text = lambda self, f: (reads.append(f), real(self, f))[1]
        fast("warcio")
        n_reads = len(reads)
        im.PathDistribution.read_text = real
        names = ["warcio", "faust-cchardet", "python-magic", "pyarrow", "orjson", "Warcio", "no-such-dist-xyz",
                 "fasttext-numpy2-wheel", "fasttext_numpy2_wheel", "datatrove"]
        print(json.dumps({"same": [fast(n) == original(n) for n in names], "answers": [fast(n) for n in names],
                          "reads": n_reads}))
        """)
    res = json.loads(out.strip().splitlines()[-1])
    assert all(res["same"]), res
    assert res["answers"][0] is True and res["answers"][6] is None  # installed / not installed
    assert res["reads"] <= 2  # the warcio dist-info's METADATA (datatrove's own reads ~170)


def test_steps_still_refuse_a_missing_dependency_and_build_with_present_ones():
    out = _run("""
        import assay.stages  # installs the fast check
        from datatrove.pipeline.base import PipelineStep
        from assay.stages.web.warc import WarcReader  # requires warcio
        class Needs(PipelineStep):
            _requires_dependencies = ["no-such-dist-xyz"]
            def run(self, data, rank=0, world_size=1):
                return data
        try:
            Needs()
        except ImportError as e:
            print("refused", "no-such-dist-xyz" in str(e))
        print("built", type(WarcReader.__new__(WarcReader)).__name__)
        """)
    assert out.splitlines() == ["refused True", "built WarcReader"]
