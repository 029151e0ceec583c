"""Administration of stores: moving them, their projections."""
