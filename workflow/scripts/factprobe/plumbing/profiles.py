"""Which Snakemake profiles a run loads, and the one mix that runs a cluster job wrong.

Snakemake reads general profiles from ``--profile`` (or ``$SNAKEMAKE_PROFILE``) and, unless
``--workflow-profile`` is given, also this workflow's ``profiles/default`` as the *workflow*
profile, whose settings win. ``profiles/default`` is the local one: its ``gpu: 1`` is a global
cap (on a cluster, one GPU job submitted at a time) and its ``default-resources`` replace the
cluster profile's (CPU jobs lose their partition). So ``snakemake --profile profiles/slurm``
would submit a SLURM run with local settings, silently. :func:`profile_mix_error` refuses that
mix at start-up and names the flag that is right (README "Running on SLURM").

The command line is read as given (``sys.argv``): when Snakemake is driven from Python through
its API nothing is auto-loaded by the command-line layer and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

#: Executors that run jobs on this machine: a general profile setting one of them is local too.
LOCAL_EXECUTORS = {"local", "dryrun", "touch"}
PROFILE_FILES = ("config.v9+.yaml", "config.v8+.yaml", "profile.yaml", "config.yaml")


def _values(argv: Sequence[str], flag: str) -> list[str]:
    """Values of ``flag`` in an argument list (``--flag a``, ``--flag=a``), in order."""
    out: list[str] = []
    for arg, following in zip(argv, [*argv[1:], ""], strict=True):
        if arg.startswith(flag + "="):
            out.append(arg.split("=", 1)[1])
        elif arg == flag and following and not following.startswith("-"):
            out.append(following)
    return out


def profile_executor(profile: str, search: Sequence[Path] = (), start: Path | None = None) -> str | None:
    """The ``executor`` a profile (a folder, or a name under ``search`` folders) sets, if any.

    A relative ``profile`` is a path from ``start``, the directory Snakemake was started from
    (default: the current one): Snakemake reads its profiles before ``--directory`` changes the
    working directory, so ``--directory elsewhere --profile profiles/slurm`` still loads this
    clone's ``profiles/slurm``.
    """
    path = Path(profile).expanduser()
    if start is not None and not path.is_absolute():
        path = Path(start) / path
    candidates = [path, *(Path(s) / profile for s in search)]
    for folder in candidates:
        for name in PROFILE_FILES:
            path = folder / name
            if path.is_file():
                try:
                    settings = yaml.safe_load(path.read_text()) or {}
                except (OSError, yaml.YAMLError):
                    return None
                value = settings.get("executor") if isinstance(settings, dict) else None
                return str(value) if value is not None else None
    return None


def auto_loaded_default(environ: Mapping[str, str], cwd: Path) -> bool:
    """Whether Snakemake's command line will load ``profiles/default`` as the workflow profile:
    it looks in the directory it was started from (``$PWD``; the working directory changes to
    ``--directory`` before the Snakefile is read)."""
    start = start_directory(environ, cwd)
    return (start / "profiles" / "default").is_dir() or (Path(cwd) / "profiles" / "default").is_dir()


def profile_mix_error(
    argv: Sequence[str],
    environ: Mapping[str, str],
    search: Sequence[Path] = (),
    auto_default: bool = True,
    start: Path | None = None,
) -> str | None:
    """The one-line refusal when a cluster profile is given with ``--profile`` and Snakemake will
    also auto-load ``profiles/default`` as the workflow profile; ``None`` when the mix is fine.

    ``search``: folders where Snakemake looks up profile names (``~/.config/snakemake``, ...);
    ``auto_default``: whether ``profiles/default`` is there to be loaded (:func:`auto_loaded_default`);
    ``start``: the directory Snakemake was started from, where relative profile paths begin.
    """
    if not auto_default or _values(argv, "--workflow-profile"):
        return None
    general = _values(argv, "--profile") or (
        [environ["SNAKEMAKE_PROFILE"]] if environ.get("SNAKEMAKE_PROFILE") else []
    )
    for profile in general:
        if profile == "none":
            continue
        executor = profile_executor(profile, search, start)
        if executor is not None and executor not in LOCAL_EXECUTORS:
            return (
                f"`--profile {profile}` (executor {executor}) also loads this workflow's local profile "
                "profiles/default, whose one-GPU cap and default resources would override it: run "
                f"`snakemake --workflow-profile {profile}` instead (README, Running on SLURM)"
            )
    return None


#: Where Snakemake looks up a ``--profile`` given by name besides the start directory: the
#: user's and the site's configuration folders (``snakemake.cli.get_profile_dir``).
USER_PROFILES = Path("~/.config/snakemake")
SITE_PROFILES = Path("/etc/xdg/snakemake")


def start_directory(environ: Mapping[str, str], cwd: Path) -> Path:
    """The directory Snakemake was started from: ``$PWD`` (the shell's; ``--directory`` changes the
    process's working directory, not the variable), else ``cwd``."""
    return Path(environ.get("PWD") or cwd)


def profile_mix_here(argv: Sequence[str], environ: Mapping[str, str], cwd: Path) -> str | None:
    """:func:`profile_mix_error` for this run, with profiles resolved as Snakemake does: relative
    paths and names from the start directory (:func:`start_directory`), then the user's and the
    site's profile folders; ``profiles/default`` looked up as :func:`auto_loaded_default` says."""
    start = start_directory(environ, cwd)
    search = [start, USER_PROFILES.expanduser(), SITE_PROFILES]
    return profile_mix_error(argv, environ, search, auto_loaded_default(environ, cwd), start)
