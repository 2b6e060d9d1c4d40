"""What the judge concludes from a run's frames: the named checks (``checks``, in the
order and with the properties ``check_list`` gives), output comparison (``compare``,
``tolerances``), and where the output's work was done (``ops``, ``work_share``)."""
