"""Warmup coverage (``regsurvey coverage``): a capture's real launches against a project's keys, by Triton
hash, for one target. ``launches`` runs both sides under the target's stand-in device (no compile);
``compare`` sets them against each other."""
