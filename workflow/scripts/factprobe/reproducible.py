"""Settings that make CPU training give the same weights on any x86-64 machine.

Training amplifies last-bit differences: the control model (:mod:`factprobe.scoring.control`)
trained by the same code on the same data came out with weights 1e-3 apart on the same machine
restricted to AVX2 kernels versus its AVX-512 ones (6e-6 apart even in float64), because PyTorch's
vectorized CPU kernels (softmax, layer norm, loss reductions) and MKL's GEMMs sum in an order set
by the vector width, and 300 optimiser steps blow that up. Capping both at AVX2 (ATen's AVX2
kernels, MKL's AVX2 conditional-numerical-reproducibility branch) was not enough across vendors:
the demo's ``judged`` control model trained that way on an AMD EPYC gave scores 0.02 nats from the
same code's on the Intel machine that made the demo digest (the ``knowledge`` one agreed), since
MKL's AVX2 branch is Intel's and other CPUs take other code. So training runs ATen's scalar
kernels and MKL's ``COMPATIBLE`` branch, the one MKL documents as giving the same results on
Intel and compatible processors, on one thread, at a moderate cost in training time
(benchmarks/RESULTS.md, "Control model training across CPU vendors").

These are read when torch (and MKL) load, so :func:`use_reproducible_cpu` must run in a fresh
process before anything imports torch: rule scripts call it first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

CPU_REPRODUCIBLE_ENV = {
    # ATen's scalar kernels, whatever vector units the CPU has.
    "ATEN_CPU_CAPABILITY": "default",
    # MKL's conditional numerical reproducibility on its vendor-independent branch; STRICT: also
    # whatever the alignment of the arrays.
    "MKL_CBWR": "COMPATIBLE,STRICT",
    # oneDNN kernels (not used by float32 training today) capped alike.
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    # a thread count changes the order of sums
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def use_reproducible_cpu(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set :data:`CPU_REPRODUCIBLE_ENV` in ``environ``; refuse once torch is imported.

    Returns the settings applied (for the job's log).
    """
    if environ is os.environ and "torch" in sys.modules:
        raise RuntimeError(
            "use_reproducible_cpu() must run before torch is imported: call it at the top of the "
            "rule script, before importing factprobe modules that import torch"
        )
    environ.update(CPU_REPRODUCIBLE_ENV)
    return dict(CPU_REPRODUCIBLE_ENV)
