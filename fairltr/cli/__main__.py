"""``python -m fairltr.cli``: the ``fairltr`` console script."""

from fairltr.cli import main

main()
