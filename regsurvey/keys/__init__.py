"""The keys API (``matrix``: ``rs.Matrix``; ``meta_tensor``: ``rs.tensor``; ``session``: the capture session a
kind body runs in, ``rs.target()``, ``rs.skip``, ``rs.pin_config``, ``rs.name``, ``rs.names``, ``rs.launch``)
and loading keys files (``keyfiles``)."""
