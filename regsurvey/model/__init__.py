"""What regsurvey's results are made of, with no behaviour beyond describing them: the one registry of
figures (:mod:`regsurvey.model.figures`). Everything else may import this package; it imports nothing
of regsurvey's."""
