"""Reading Wikidata JSON dumps into the extraction tables (docs/contracts.md)."""
