"""Launches captured instead of run: the session a kind body runs in (``session``), a running program's
launches recorded (``recorder``) and replayed (``replay``)."""
