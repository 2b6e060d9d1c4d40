"""Rewrite vectors.npz after editing strategies.jsonl: ``.venv/bin/python -m knowledge_base.seed``."""

from ..ranking.embed import MiniLMEmbedder
from . import VECTOR_CACHE, write_vector_cache

if __name__ == "__main__":
    print(f"{write_vector_cache(MiniLMEmbedder())} seed vectors written to {VECTOR_CACHE}")
