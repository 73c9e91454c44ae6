"""Reading Wikidata JSON dumps into the extraction tables (DESIGN.md §2)."""
