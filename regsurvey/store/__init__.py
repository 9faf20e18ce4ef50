"""What a survey keeps: surveys per commit (``store``), content-addressed objects (``objectstore``),
results keyed on Triton's cache hash (``resultcache``), and what each stored file proves (``signing``)."""
