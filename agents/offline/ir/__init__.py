"""The engine's expression graph: ``expr`` (the node), ``graph`` (built from the
sandbox's analysis of a reference), ``layers`` and ``composite`` (nn layers and
composite ops written as nodes)."""
