"""Surveys of revisions: a stored survey or a new one (``obtain``), ranges of commits (``range``), bisection
(``bisect``), cold rebuilds (``rebuild``) and the demo (``demo``). The checkouts they survey are
:mod:`regsurvey.repo`'s."""
