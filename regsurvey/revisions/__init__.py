"""Surveys of revisions: temporary worktrees (``checkout``), a stored survey or a new one (``obtain``),
ranges of commits (``range``), cold rebuilds (``rebuild``) and the demo (``demo``)."""
