"""eqrewrite's oracle: differential execution of original and rewritten code.

The only package that imports torch. It runs targets in warm worker processes,
eagerly and compiled, compares everything observable, counts graph breaks and
names the culprit of any difference (see docs/oracle.md).
"""
