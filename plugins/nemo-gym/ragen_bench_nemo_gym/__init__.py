"""ragen-bench's single-agent ids as a NeMo Gym resources server (:mod:`.app`)."""
