"""How the workflow runs, apart from the science it computes.

The parts of factprobe that Snakemake itself needs, not the benchmark: each rule job's log and
its one-line failure message (:mod:`~factprobe.plumbing.rulelog`), faults of the operating system
and of SLURM named with the path or profile key to change (:mod:`~factprobe.plumbing.osfault`,
:mod:`~factprobe.plumbing.slurmfail`, :mod:`~factprobe.plumbing.slurmfit`), the profile checks
(:mod:`~factprobe.plumbing.profiles`), the library modules a rule's code reaches
(:mod:`~factprobe.plumbing.code_inputs`), the settings and input choices resolved while the
Snakefile is parsed (:mod:`~factprobe.plumbing.run_settings`,
:mod:`~factprobe.plumbing.run_inputs`), the interpreter check
(:mod:`~factprobe.plumbing.interpreter`) and disk space and input-scaled resources
(:mod:`~factprobe.plumbing.diskspace`).

Nothing is imported here: the Snakefile imports these modules while it is parsed, so each stays
free of the science stack (pandas, numpy, torch) and importing the package costs nothing.
"""
