"""``python -m eqrewrite.rewriter`` runs the eqrewrite command line."""

from .cli import main

if __name__ == "__main__":
    main()
