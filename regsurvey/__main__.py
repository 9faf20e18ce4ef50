"""``python -m regsurvey``."""

from .cli import main

main()
