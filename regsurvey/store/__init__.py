"""What a survey keeps: surveys per commit (``store``), content-addressed objects (``objectstore``) and
results keyed on Triton's cache hash (``resultcache``)."""
