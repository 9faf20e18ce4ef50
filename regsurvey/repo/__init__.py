"""The surveyed repository: its git checkouts (``checkout``: the working tree, or a commit in a temporary
worktree removed afterwards; a file at a revision) and its source files at a revision (``sources``:
``SourcePaths``, the paths an object names and their text)."""
