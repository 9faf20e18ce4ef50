"""``regsurvey capture``: a running program's launches recorded (``recorder``) and replayed by a generated
keys file (``replay``). The session a kind body's launches are captured in is the keys API's
(:mod:`regsurvey.keys.session`)."""
