"""Services, the annotator's work: blinded items, judgments, drafts, crowd arrivals, guidelines, profile
search."""
