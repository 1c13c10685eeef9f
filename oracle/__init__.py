"""eqrewrite's oracle: differential execution of original and rewritten code.

The only package that imports torch. Built under its own issue.
"""
