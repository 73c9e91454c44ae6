"""`--profile profiles/slurm` is refused with the flag that is right (factprobe.plumbing.profiles)."""

from pathlib import Path

import pytest
from factprobe.plumbing.profiles import auto_loaded_default, profile_executor, profile_mix_error

ROOT = Path(__file__).resolve().parents[2]
SLURM = str(ROOT / "profiles" / "slurm")


@pytest.mark.parametrize(
    "argv",
    [
        ["snakemake", "--profile", SLURM],
        ["snakemake", f"--profile={SLURM}", "--cores", "4"],
        ["snakemake", "-n", "--profile", SLURM, "all"],
    ],
)
def test_a_cluster_profile_given_with_profile_is_refused_naming_workflow_profile(argv):
    message = profile_mix_error(argv, {})
    assert message is not None and "\n" not in message
    assert f"run `snakemake --workflow-profile {SLURM}` instead" in message
    assert "(executor slurm)" in message and "profiles/default" in message


def test_the_environment_variable_counts_like_the_flag():
    assert profile_mix_error(["snakemake"], {"SNAKEMAKE_PROFILE": SLURM}) is not None


@pytest.mark.parametrize(
    ("argv", "auto"),
    [
        (["snakemake", "--workflow-profile", SLURM], True),  # what the README says
        (["snakemake", "--profile", SLURM, "--workflow-profile", "none"], True),  # the default not loaded
        (["snakemake", "--profile", SLURM], False),  # no profiles/default to load (module elsewhere)
        (["snakemake", "--profile", "none"], True),
        (["snakemake", "--cores", "2"], True),
    ],
)
def test_mixes_that_run_right_pass(argv, auto):
    assert profile_mix_error(argv, {}, auto_default=auto) is None


def test_a_local_general_profile_passes(tmp_path):
    local = tmp_path / "mine"
    local.mkdir()
    (local / "config.yaml").write_text("cores: 8\n")
    assert profile_executor(str(local)) is None
    assert profile_mix_error(["snakemake", "--profile", str(local)], {}) is None
    (local / "config.yaml").write_text("executor: local\n")
    assert profile_mix_error(["snakemake", "--profile", str(local)], {}) is None


def test_profile_names_are_looked_up_in_the_search_folders(tmp_path):
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "config.v8+.yaml").write_text("executor: slurm\njobs: 10\n")
    assert profile_executor("cluster", [tmp_path]) == "slurm"
    assert profile_mix_error(["snakemake", "--profile", "cluster"], {}, [tmp_path]) is not None


def test_profiles_default_is_found_from_the_start_directory(tmp_path):
    assert auto_loaded_default({"PWD": str(ROOT)}, tmp_path)
    assert not auto_loaded_default({"PWD": str(tmp_path)}, tmp_path)


def test_this_runs_check_looks_for_profiles_default_from_the_working_directory(tmp_path):
    """common.smk's one call (factprobe.plumbing.profiles.profile_mix_here): refused where profiles/default
    would be auto-loaded, fine from a folder without one."""
    from factprobe.plumbing.profiles import profile_mix_here

    argv = ["snakemake", "--profile", SLURM]
    assert profile_mix_here(argv, {"PWD": str(ROOT)}, ROOT) is not None
    assert profile_mix_here(argv, {"PWD": str(tmp_path)}, tmp_path) is None


def test_a_relative_cluster_profile_with_directory_is_refused(tmp_path, monkeypatch):
    """`snakemake --directory <dir> --profile profiles/slurm` from the clone: Snakemake reads the
    profile from the start directory ($PWD), then changes to <dir> before the Snakefile runs."""
    from factprobe.plumbing.profiles import profile_mix_here

    work = tmp_path / "run"
    work.mkdir()
    monkeypatch.chdir(work)  # where the check runs: the --directory folder
    argv = ["snakemake", "--directory", str(work), "--profile", "profiles/slurm"]
    message = profile_mix_here(argv, {"PWD": str(ROOT)}, work)
    assert message is not None and "run `snakemake --workflow-profile profiles/slurm` instead" in message
    # the relative path begins at the start directory, not at the working directory
    assert profile_executor("profiles/slurm", start=ROOT) == "slurm"
    assert profile_executor("profiles/slurm", start=work) is None
