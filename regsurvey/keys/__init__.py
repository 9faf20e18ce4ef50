"""The keys API (``matrix``: ``rs.Matrix``; ``meta_tensor``: ``rs.tensor``) and loading keys files
(``keyfiles``)."""
