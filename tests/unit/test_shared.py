"""Shared helpers: stable hashing, atomic writes, cross-dump label lookup."""

import os

import pyarrow as pa
import pytest
from factprobe.hashing import hash_fraction, stable_hash
from factprobe.io import atomic_dir, atomic_path, read_table, write_table
from factprobe.wikidata.labels import label_table


def test_stable_hash_is_fixed_and_key_sensitive():
    # blake2b-64 of "Q42\x1fP19" computed independently with hashlib in a shell
    import hashlib

    expected = int.from_bytes(hashlib.blake2b(b"Q42\x1fP19", digest_size=8).digest(), "big")
    assert stable_hash("Q42", "P19") == expected
    assert stable_hash("Q42", "P19") != stable_hash("Q42P", "19")
    assert 0 <= hash_fraction("x") < 1


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []
    write_table(pa.table({"a": [1, 2]}), target)
    assert read_table(target).column("a").to_pylist() == [1, 2]
    assert os.listdir(tmp_path) == ["out.parquet"]


def test_atomic_file_and_folder_get_the_umask_permissions(tmp_path):
    """One permission behaviour for every atomic output: what the umask grants (not mkstemp's 0600
    nor mkdtemp's 0700), so a shared results folder stays readable."""
    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "f.txt") as tmp:
            tmp.write_text("x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "inner.txt").write_text("y")
        with atomic_dir(tmp_path / "d") as tmp:  # replaces an existing folder whole
            (tmp / "other.txt").write_text("z")
    finally:
        os.umask(old)
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["other.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f.txt"]


def test_atomic_dir_leaves_nothing_on_failure(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("kept")
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "half.txt").write_text("x")
            raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["old.txt"]


def test_read_table_names_broken_file(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(RuntimeError, match="bad.parquet: cannot read Parquet"):
        read_table(bad)


def test_label_table_prefers_newest_dump(demo_tables):
    files = [demo_tables[d] / "labels.parquet" for d in ("20141201", "20190201")]
    labels = label_table(files, ["en"])
    belgium = labels[(labels.entity == "Q31") & (labels.lang == "en")]
    assert belgium.iloc[0].tolist() == ["Q31", "en", "Belgium", "label"]
    # Q1 (universe) exists only in the 2014 dump, with aliases listed in that file.
    q1 = labels[labels.entity == "Q1"]
    assert q1.iloc[0].form == "universe"
    assert {"cosmos", "The Universe", "Space"} <= set(q1[q1.source == "alias"].form)
    # Every (entity, lang) comes from one dump only: Q31's 2019 English label set, not 2014's.
    assert not labels.duplicated(["entity", "lang", "form"]).any()
