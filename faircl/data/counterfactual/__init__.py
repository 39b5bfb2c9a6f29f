"""Counterfactual text: aligned word lists, CDA rewriting and the polarity check, LLM augmentation, tuple files and
the :class:`CounterfactualTuples` DataModule of CCD and :class:`SourcedTuples` (tuples of named corpora).

Modules import one way: ``lexicon`` ← ``cda`` ← ``llm`` ← ``tuples`` ← ``sources`` (and ``files``, used by ``tuples``).
"""

from faircl.data.counterfactual.cda import (CDA, PolarityReport, make_cda_tuples, match_case, occurrences, polarity,
                                            polarity_check, select_texts, split_sentences, swap_words)
from faircl.data.counterfactual.files import read_texts, read_tuple_file, write_tuple_file
from faircl.data.counterfactual.lexicon import BUILTIN_GENDER_PAIRS, BUILTIN_NEUTRAL, NEUTRAL, AttributeLexicon
from faircl.data.counterfactual.llm import (DEFAULT_EXAMPLES, TASK_TEMPLATE, AugmentBackend, AugmentResult,
                                            LLMAugmenter, LLMError, OpenAIChatBackend, ReplyParseError,
                                            extract_json_object, parse_reply)
from faircl.data.counterfactual.sources import SOURCES, SourcedTuples, source_texts, source_tuples
from faircl.data.counterfactual.tuples import CounterfactualTuples, TupleDataset

__all__ = [
    "AttributeLexicon", "AugmentBackend", "AugmentResult", "BUILTIN_GENDER_PAIRS", "BUILTIN_NEUTRAL", "CDA",
    "CounterfactualTuples", "DEFAULT_EXAMPLES", "LLMAugmenter", "LLMError", "NEUTRAL", "OpenAIChatBackend",
    "PolarityReport", "ReplyParseError", "TASK_TEMPLATE", "TupleDataset", "extract_json_object", "make_cda_tuples",
    "match_case", "occurrences", "parse_reply", "polarity", "polarity_check", "read_texts", "read_tuple_file",
    "SOURCES", "SourcedTuples", "select_texts", "source_texts", "source_tuples", "split_sentences", "swap_words", "write_tuple_file",
]
