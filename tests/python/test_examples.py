# Runs the Python seed-bug demo as a user would and checks what it reports.
# SPDX-License-Identifier: MIT
import os
import re
import subprocess
import sys

import pytest

DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "examples", "seed_bug.py")


@pytest.mark.processes
def test_seed_bug_demo_counts_overlap_and_fix():
    out = subprocess.run([sys.executable, DEMO, "4000", "4"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    bug = re.search(r"seed = 42 \+ rank \(torch\)\s+N=4000 W=4: (\d+) samples read more than once, (\d+) never read",
                    out.stdout)
    assert bug and int(bug.group(1)) > 400 and int(bug.group(2)) > 400
    assert "shared seed (distsampler)    N=4000 W=4: 0 samples read more than once, 0 never read" in out.stdout
    assert "distsampler.verify: ok: N=4000 W=4 tail=uneven counts 1000..1000" in out.stdout
