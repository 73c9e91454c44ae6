"""Disk: disk_mb from input size, and a full disk reported as such with no stale folder."""

import errno
import re
import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factprobe import io
from factprobe.distractors.semantic import index
from factprobe.io import atomic_dir
from factprobe.plumbing.diskspace import OutOfSpaceError, input_size_mb, path_size
from factprobe.settings import Sem

ROOT = Path(__file__).resolve().parents[2]
Usage = namedtuple("Usage", "total used free")


def test_input_size_mb_sums_files_and_folders(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x" * 3_000_000)
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "b.bin").write_bytes(b"x" * 1_500_000)
    (tmp_path / "d" / "sub" / "c.bin").write_bytes(b"x" * 500_000)
    assert path_size(tmp_path / "d") == 2_000_000
    files = [str(tmp_path / "a.bin"), [str(tmp_path / "d")]]
    # (3 + 2) MB x 2.5 = 12.5 -> 13; the floor wins for a small factor.
    assert input_size_mb(2.5, floor=1)(None, files) == 13
    assert input_size_mb(0.1, floor=100)(None, files) == 100
    with pytest.raises(FileNotFoundError):  # Snakemake then shows <TBD> and asks again later
        input_size_mb(1.0)(None, [str(tmp_path / "absent.parquet")])


@pytest.mark.parametrize(
    "rule, factor",
    [
        ("extract_dump", "1.0"),
        ("diff_dumps", "1.0"),
        ("temporal_view", "1.5"),
        ("build_sem_index", "1.0"),
        ("retrieve_distractors", "0.1"),
        ("appropt_distractors", "0.1"),
        ("build_probes", "1.0"),
        ("score_shard", "15"),
        ("score_suite", "1.0"),
    ],
)
def test_large_output_rules_declare_disk_mb(rule, factor):
    text = "".join(p.read_text() for p in sorted((ROOT / "workflow" / "rules").glob("*.smk")))
    block = re.search(rf"\nrule {rule}:\n(.*?)(?=\nrule |\Z)", text, re.S).group(1)
    assert f"disk_mb=input_size_mb({factor})" in block


def small_claims():
    # Ten subjects sharing objects: enough for a TF-IDF matrix and an HNSW graph.
    rows = [(s, 31 + s % 3, 100 + s % 4, 1) for s in range(1, 11)]
    return pd.DataFrame(rows, columns=["subject", "property", "object", "rank"])


def build(target, needed_mb=5.0):
    with atomic_dir(target, needed_mb) as tmp:
        index.build_index(small_claims(), tmp, Sem(recall_queries=0))


def test_index_is_renamed_into_place(tmp_path):
    target = tmp_path / "index" / "20190201"
    target.mkdir(parents=True)
    (target / "stale.npy").write_bytes(b"old")
    build(target)
    assert sorted(p.name for p in target.iterdir()) == [
        "entities.npy",
        "features.npy",
        "hnsw.bin",
        "hnsw.bin.dat",
        "idf.npy",
        "matrix.data.npy",
        "matrix.indices.npy",
        "matrix.indptr.npy",
        "meta.json",
    ]
    assert sorted(p.name for p in target.parent.iterdir()) == ["20190201"]


def test_enospc_names_file_and_bytes_and_leaves_no_temp_folder(tmp_path, monkeypatch):
    target = tmp_path / "index" / "20190201"
    real_save = np.save

    def save(path, array):
        if Path(path).name == "idf.npy":  # the third file: two are on disk already
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_save(path, array)

    monkeypatch.setattr(index.np, "save", save)
    with pytest.raises(OutOfSpaceError) as err:
        build(target, needed_mb=5.0)
    msg = str(err.value)
    assert err.value.errno == errno.ENOSPC
    assert "no space left on the device while writing" in msg
    assert re.search(re.escape(f"{target.parent}/.20190201.") + r"\w+\.tmp/idf\.npy", msg), msg
    assert f"output {target}" in msg
    assert "about 5,000,000 bytes (5 MB, the rule's disk_mb)" in msg
    assert list((tmp_path / "index").iterdir()) == []


def test_cpp_iostream_error_on_a_full_disk_is_named(tmp_path, monkeypatch):
    target = tmp_path / "20190201"

    def save_index(self, path, save_data=True):
        raise RuntimeError("basic_ios::clear: iostream error")

    monkeypatch.setattr(index, "build_hnsw", _hnsw_with(save_index))
    monkeypatch.setattr(io.shutil, "disk_usage", lambda p: Usage(10**9, 10**9 - 1_000_000, 1_000_000))
    with pytest.raises(
        OutOfSpaceError, match=r"needs about 5,000,000 bytes .* 1,000,000 bytes \(1 MB\) are free"
    ):
        build(target, needed_mb=5.0)
    assert list(tmp_path.iterdir()) == []


def test_other_errors_pass_through_and_clean_up(tmp_path, monkeypatch):
    target = tmp_path / "20190201"

    def save_index(self, path, save_data=True):
        raise RuntimeError("basic_ios::clear: iostream error")

    monkeypatch.setattr(index, "build_hnsw", _hnsw_with(save_index))
    # Plenty of space: the stream error has another cause and is not called a full disk.
    monkeypatch.setattr(io.shutil, "disk_usage", lambda p: Usage(10**12, 0, 10**12))
    with pytest.raises(RuntimeError, match="iostream error") as err:
        build(target, needed_mb=5.0)
    assert not isinstance(err.value, OutOfSpaceError)
    assert list(tmp_path.iterdir()) == []


def _hnsw_with(save_index):
    real = index.build_hnsw

    def build_hnsw(*args, **kwargs):
        built = real(*args, **kwargs)
        return type("Index", (), {"saveIndex": save_index, "__getattr__": lambda s, n: getattr(built, n)})()

    return build_hnsw


def test_disk_usage_is_measured_before_the_partial_output_is_removed(tmp_path, monkeypatch):
    seen = []
    real = shutil.disk_usage
    monkeypatch.setattr(io.shutil, "disk_usage", lambda p: seen.append(Path(p).exists()) or real(p))
    with pytest.raises(OutOfSpaceError):
        with atomic_dir(tmp_path / "out") as tmp:
            (tmp / "part").write_bytes(b"x")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert seen == [True] and list(tmp_path.iterdir()) == []
