"""factprobe: factual-knowledge probing benchmarks from Wikidata dumps.

The library behind the Snakemake workflow; each stage lives in its own subpackage and is
importable and unit-tested without Snakemake.
"""

__version__ = "0.1.0"
