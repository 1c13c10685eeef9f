"""Rules, and where they match: ``rules.py`` loads and validates rule packs (YAML, errors
with ``file:line:col``, the packaged packs); ``matcher.py`` walks one module's ``ast`` and
finds each rule's edits (patterns, kinds, scopes, guards, suppression comments), as
``Edit`` and ``Note`` values with character spans.

May import: syntax, analysis, kinds.
"""
