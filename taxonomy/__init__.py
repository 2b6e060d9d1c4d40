"""Names the whole project shares and every package reads from one place (issue 58): the
op families (``taxonomy.op_families``). A leaf: it imports nothing of the project, so the
judge (``sandbox``), the knowledge base and the engine (``agents``) may all read it."""
