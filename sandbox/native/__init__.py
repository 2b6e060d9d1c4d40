"""Native candidates' libraries: built in the sandbox (``build``), kept by content
in the judge's cache (``cache``) that sandboxes mount read-only."""
