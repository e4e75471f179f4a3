"""Learned defenses: sentence embeddings and what is built on them.

- ``_embedding``: the MiniLM embedder and its cache, shared by the models below.
- ``_semantic``: ``semantic``, nearest neighbours in a bank of known attacks
  (banks in ``data/``).
- ``_embedding_lr``, ``_head``: ``embedding-lr``, a logistic-regression head and its
  model card (the shipped head is in ``weights/embedding-lr/``).
- Training is not here: ``embedding-lr`` heads and ``shieldguard`` are trained by
  :mod:`shieldbench.train` (``shieldbench train embedding-lr|shieldguard``), which no
  run-time module imports.
- ``_shift``: ``topic-shift``, a sentence foreign to the rest of a document.
- ``_hf``, ``_onnx``: ``hf:DIR`` and ``onnx:DIR``, any local sequence classifier
  (PyTorch through transformers, or ONNX Runtime), over ``_classifier`` (tokens,
  windows, batches, labels, verdicts) and ``_model_files`` (folders, identity hash,
  label maps, options).
- ``_windows``: overlapping token windows, shared with ``shieldguard``.
"""
