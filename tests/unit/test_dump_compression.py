"""A dump whose compression does not match its file name is reported as such, not as a damaged
archive to download again (factprobe.wikidata.stream)."""

import bz2
import gzip
from pathlib import Path

import pytest
from factprobe.wikidata.reader import DumpError, extract_dump
from factprobe.wikidata.stream import compression_mismatch, sniff_compression

ENTITY = b'{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"universe"}},"claims":{}}'
DUMP = b"[\n" + ENTITY + b",\n]\n"


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        (
            "d.json.bz2",
            gzip.compress(DUMP),
            "holds gzip data but its name says bzip2 (.bz2). Rename it to end in .gz",
        ),
        (
            "d.json.gz",
            bz2.compress(DUMP),
            "holds bzip2 data but its name says gzip (.gz). Rename it to end in .bz2",
        ),
        (
            "d.json",
            gzip.compress(DUMP),
            "holds gzip data but its name says uncompressed. Rename it to end in .gz",
        ),
        ("d.json.bz2", DUMP, "holds not compressed data but its name says bzip2 (.bz2)"),
    ],
    ids=["gzip-as-bz2", "bz2-as-gz", "gzip-as-json", "plain-as-bz2"],
)
def test_compression_that_does_not_match_the_extension_is_named(tmp_path, name, data, said):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DumpError) as err:
        extract_dump(path, tmp_path / "out", ["en"], progress=False)
    message = str(err.value)
    assert message.startswith(f"{path}: the compression does not match the extension: ")
    assert said in message and "truncated or corrupt" not in message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_matching_files_pass_and_read_the_same(tmp_path):
    for name, data in (
        ("a.json", DUMP),
        ("a.json.gz", gzip.compress(DUMP)),
        ("a.json.bz2", bz2.compress(DUMP)),
    ):
        (tmp_path / name).write_bytes(data)
        assert compression_mismatch(tmp_path / name, data[:8]) is None
        stats = extract_dump(tmp_path / name, tmp_path / name.replace(".", "_"), ["en"], progress=False)
        assert stats.kinds == {"item": 1}


def test_magic_bytes():
    assert sniff_compression(b"\x1f\x8b\x08\x00") == "gzip"
    assert sniff_compression(b"BZh91AY") == "bzip2"
    assert sniff_compression(b"\x28\xb5\x2f\xfd") == "zstd"
    assert sniff_compression(b"[\n{") is None
    assert compression_mismatch(Path("x.json.bz2"), b"") is None  # empty: reported where it is read
