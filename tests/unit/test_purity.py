"""The pure core imports no Kafka client, no faust and no rocksdict (STYLE.md)."""

from __future__ import annotations

import subprocess
import sys

PURE = ["streamdedup", "streamdedup.config", "streamdedup.canonical", "streamdedup.fingerprint", "streamdedup._kernels",
        "streamdedup.lsh", "streamdedup.estimate", "streamdedup.signature", "streamdedup.calibration", "streamdedup.verify",
        "streamdedup.record", "streamdedup.index", "streamdedup.engine", "streamdedup.state.base", "streamdedup.decode"]
IO = ["confluent_kafka", "faust", "aiokafka", "rocksdict"]


def test_pure_core_imports_no_io_library() -> None:
    code = "import sys\n" + "".join(f"import {m}\n" for m in PURE) + f"print([m for m in {IO!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
