"""factprobe.distractors.semantic: the Sem strategy's index (distractors paper §3.3, "Semantic
Distractors"): each entity's bag of features (:mod:`.bags`) weighted by TF-IDF or BM25
(:mod:`.weighting`) into the L2-normalised rows of an index with an optional nmslib HNSW graph
(:mod:`.index`), built in parts by the workflow (:mod:`.part_count`, :mod:`.part_bags`,
:mod:`.index_parts`), and the nearest neighbours searched in it (:mod:`.search`, exact search
within a type's slice: :mod:`.slices`).

Nothing is imported here: the Snakefile imports :mod:`.part_count` (standard library only) while
parsing, and a package import must not bring numpy or scipy with it.
"""
