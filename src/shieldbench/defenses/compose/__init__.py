"""Composition: defenses built from other defenses.

- ``_composite``: the base every composite shares (children, name, capabilities).
- ``_combinators``: ``any``, ``all``, ``vote``, ``fuse``.
- ``_routing``: ``tiered`` and ``dual``.
- ``_wrappers``: ``fail_closed``, ``fail_open``, ``dedup``.
- ``_preprocess``: ``preprocess``, strips infrastructure wrappers before a child sees a text.
- ``_recommended``: ``recommended``, the default pipeline.
"""
