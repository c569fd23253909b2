#!/usr/bin/env python3
"""rag_conflict_demo: a RAG pipeline silently picks a side when its sources disagree; a conflict layer fixes it.

A small knowledge base holds three real-life contradictions: a revenue restatement ($4.2M preliminary vs $6.8M
audited), a policy reversal (3 office days vs fully remote) and versioned API docs (100 vs 500 requests per minute).
Each scenario's question retrieves the top-k documents by cosine similarity (sentence-transformers
all-MiniLM-L6-v2), then runs twice on the same retrieval:

  1. naive     the whole top-k goes to an extractive QA reader (deepset/minilm-uncased-squad2), which answers
               from whichever document it happens to prefer; the conflict is detected and logged, not acted on.
  2. resolved  a ConflictDetector flags contradicting document pairs (numbers that disagree, a negation or
               direction word one side lacks), a resolver keeps the newest document of each conflict cluster,
               and the reader answers from what is left, saying what it discarded and why.

Everything runs on a CPU with no API key. Models load by hub name, or from a local directory.

Set up and run (about a minute, the first run downloads ~150 MB of models):
  python -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/python rag_conflict_demo.py
Test (no model download, no network):
  python rag_conflict_demo.py --test

Usage:
  python rag_conflict_demo.py               full walkthrough, with INFO logs on stderr
  python rag_conflict_demo.py --quiet       demo output only
  python rag_conflict_demo.py --no-color    plain text (also when stdout is not a TTY or NO_COLOR is set)
  python rag_conflict_demo.py --embed-model DIR --qa-model DIR    local model copies (offline)
  python rag_conflict_demo.py --test        the embedded unittest suite

Environment: RAG_EMBED_MODEL, RAG_QA_MODEL name the models like the flags do (the flags win). With
RAG_EMBED_MODEL set to a local directory, --test also runs integration tests with the real embedder.

Exit status: 0 success, 1 the experiment could not run (e.g. a model is missing), 2 bad usage.

References: the article's pipeline (top-k retrieval, pairwise conflict heuristics gated on topic similarity,
cluster-aware recency resolution); Rajpurkar et al. 2018, SQuAD 2.0 (the null answer at [CLS]).
"""

import argparse
import contextlib
import dataclasses
import datetime as dt
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("rag_conflict_demo")

# ------------------------------------------------------------------------------------------------------------------
# Configuration


@dataclass
class Config:
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    qa_model: str = "deepset/minilm-uncased-squad2"
    top_k: int = 3  # documents retrieved per query
    threshold: float = 0.68  # topic-similarity gate, cosine of MiniLM embeddings in [0, 1]; the article's value
    max_answer_tokens: int = 30  # longest answer span the reader may return, in word pieces
    max_seq_len: int = 384  # reader window in word pieces (question + context), SQuAD fine-tuning length
    doc_stride: int = 128  # overlap between reader windows on long contexts, in word pieces
    embed_batch: int = 64  # texts per embedding batch
    hub_timeout: float = 5.0  # seconds to wait for the model hub before giving up (fail fast, no retry loop)
    answer_width: int = 72  # wrap width of answers in the walkthrough, in characters
    table_width: int = 34  # width of an answer cell in the side-by-side table, in characters


# ------------------------------------------------------------------------------------------------------------------
# Knowledge base


@dataclass(frozen=True)
class Document:
    source_id: str
    title: str
    date: str | None  # ISO-8601 date or datetime, as written in the source
    content: str
    version: str | None = None  # "2", "2.0.1": compared as tuples of integers
    extra: dict = field(default_factory=dict, compare=False, hash=False, repr=False)  # unknown fields, kept


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
)


def date_key(doc):
    """Sort key for recency: a document's date as a naive datetime; undated documents sort oldest.

    "2024-04-03" -> datetime(2024, 4, 3, 0, 0); None -> datetime.min
    """
    if not doc.date:
        return dt.datetime.min
    return dt.datetime.fromisoformat(doc.date).replace(tzinfo=None)


class UsageError(Exception):
    """Bad input from the user: one line on stderr, exit code 2."""


VERSION_RE = re.compile(r"v?\d+(?:\.\d+)*")


def load_kb(path):
    """(documents, questions) from a JSON file {"documents": [...], "questions": [...]} or JSON Lines of documents.

    Every problem is a UsageError naming the file and, where it applies, the line/column, document or field.
    """
    records, questions = read_kb_records(path)
    if not records:
        raise UsageError(f"{path}: no documents")
    docs, seen = [], {}
    for n, (where, record) in enumerate(records, 1):
        d = parse_document(record, f"{path}: document {n}{where}")
        if d.source_id in seen:
            raise UsageError(f"{path}: document {n}{where}: duplicate source_id '{d.source_id}' "
                             f"(first used by document {seen[d.source_id]})")
        seen[d.source_id] = n
        docs.append(d)
    return tuple(docs), [check_question(q, f"{path}: question {i}") for i, q in enumerate(questions, 1)]


def read_kb_records(path):
    """[(where, record)], questions: where is ' (line N)' for JSON Lines, '' for JSON."""
    text = read_text(path)
    if not path.lower().endswith((".jsonl", ".ndjson")):
        try:
            top = json.loads(text)
        except json.JSONDecodeError as e:
            if not e.msg.startswith("Extra data"):  # several JSON values: JSON Lines without the extension
                raise UsageError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}")
        else:
            if not isinstance(top, dict) or not isinstance(top.get("documents"), list):
                raise UsageError(f"{path}: top level must be an object {{\"documents\": [...], \"questions\": "
                                 f"[...]}}, got {json_type(top)}" + ("" if not isinstance(top, dict) else
                                                                   " without a 'documents' list"))
            questions = top.get("questions", [])
            if not isinstance(questions, list):
                raise UsageError(f"{path}: 'questions' must be a list of strings, got {json_type(questions)}")
            return [("", r) for r in top["documents"]], questions
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append((f" (line {lineno})", json.loads(line)))
            except json.JSONDecodeError as e:
                raise UsageError(f"{path}: invalid JSON Lines at line {lineno}, column {e.colno}: {e.msg}")
    return records, []


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


def parse_document(record, where):
    """A Document from one JSON record, or a UsageError saying what is wrong with it and where."""
    if not isinstance(record, dict):
        raise UsageError(f"{where}: expected an object, got {json_type(record)}")
    for name in ("source_id", "content"):
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            problem = "missing" if value is None else "empty" if isinstance(value, str) else json_type(value)
            raise UsageError(f"{where}: field '{name}' is {problem}; it must be a non-empty string")
    sid = record["source_id"]
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise UsageError(f"{where} ('{sid}'): field 'title' must be a string, got {json_type(title)}")
    date = record.get("date")
    if date is not None and not valid_iso_date(date):
        raise UsageError(f"{where} ('{sid}'): field 'date' {json.dumps(date)} is not an ISO-8601 date or "
                         f"datetime (e.g. 2024-04-03 or 2024-04-03T09:30:00)")
    version = record.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version >= 0:
        version = str(version)
    elif version is not None and not (isinstance(version, str) and VERSION_RE.fullmatch(version)):
        raise UsageError(f"{where} ('{sid}'): field 'version' {json.dumps(version)} is neither an integer nor "
                         f"a dotted version like \"2.0.1\"")
    known = {"source_id", "content", "title", "date", "version"}
    return Document(sid, title or sid, date, record["content"], version,
                    {k: v for k, v in record.items() if k not in known})


def valid_iso_date(value):
    """True for ISO-8601 dates and datetimes: "2024-04-03", "2024-04-03T09:30:00Z"; False for "03/04/2024"."""
    if not isinstance(value, str) or not re.match(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        dt.datetime.fromisoformat(value)
        return True
    except ValueError:
        return False


def check_question(question, where):
    if not isinstance(question, str) or not question.strip():
        raise UsageError(f"{where}: a question must be a non-empty string, got "
                         f"{json.dumps(question) if isinstance(question, str) else json_type(question)}")
    return question.strip()


# ------------------------------------------------------------------------------------------------------------------
# Text features

# $4.2M, 1,500, 12.5%, 100; the lookbehind keeps "v1.2" and "FY2023" out.
NUMBER_RE = re.compile(r"(?<![\w.])[$€£]?\d+(?:,\d{3})*(?:\.\d+)?(?:[MBK](?![A-Za-z])|%)?")
NEGATION_TOKENS = frozenset({
    "not", "no", "never", "none", "nor", "neither", "cannot", "can't", "doesn't", "don't", "isn't", "aren't",
    "wasn't", "weren't", "won't", "shouldn't", "didn't",
})
DIRECTIONAL_TOKENS = frozenset({"increased", "decreased", "reduced", "eliminated", "removed", "discontinued"})
SIGNAL_TOKENS = NEGATION_TOKENS | DIRECTIONAL_TOKENS
TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")


def extract_numbers(text):
    """Meaningful numbers in text: currency, separators, decimals and M/B/K/% kept; years and small integers skipped.

    "revenue of $4.2M for fiscal year 2023, 3 offices" -> frozenset({'$4.2M'})
    """
    found = set()
    for match in NUMBER_RE.finditer(text):
        number = match.group()
        bare = number.isdigit()  # no currency sign, separator, decimal point or suffix
        if bare and (1900 <= int(number) <= 2099 or int(number) < 10):
            continue
        found.add(number)
    return frozenset(found)


def tokens(text):
    """Lower-cased word tokens, apostrophes kept: "Isn't it?" -> ["isn't", 'it']"""
    return TOKEN_RE.findall(text.lower().replace("\u2019", "'"))


# ------------------------------------------------------------------------------------------------------------------
# Retrieval


@dataclass(frozen=True)
class Retrieved:
    doc: Document
    score: float  # cosine similarity to the query
    row: int  # row of the document in the index's embedding matrix


@dataclass
class Index:
    docs: tuple
    vectors: np.ndarray  # (n_docs, dim), L2-normalised


def build_index(docs, embed, batch_size=64, progress=None):
    """Embed every document once, in batches of batch_size; vectors are L2-normalised rows.

    progress(done, total) is called after each batch (the CLI prints it once embedding takes a while).
    """
    docs = tuple(docs)
    chunks = []
    for i in range(0, len(docs), batch_size):
        chunks.append(embed([d.content for d in docs[i:i + batch_size]]))
        if progress:
            progress(min(i + batch_size, len(docs)), len(docs))
    return Index(docs, normalise(np.vstack(chunks)))


class Progress:
    """Progress on stderr, only once a task has run for `after` seconds, at most one line per second."""

    def __init__(self, label, after=2.0):
        self.label, self.after = label, after
        self.start = self.last = time.monotonic()

    def __call__(self, done, total):
        now = time.monotonic()
        if now - self.start >= self.after and (now - self.last >= 1.0 or done == total):
            self.last = now
            print(f"{self.label}: {done}/{total} ({now - self.start:.0f} s)", file=sys.stderr, flush=True)


def normalise(vectors):
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def retrieve(index, query_vector, k):
    """Top-k documents by cosine; ties broken by source_id so runs are deterministic."""
    scores = index.vectors @ normalise(np.atleast_2d(query_vector))[0]
    order = sorted(range(len(index.docs)), key=lambda i: (-round(float(scores[i]), 6), index.docs[i].source_id))
    return [Retrieved(index.docs[i], float(scores[i]), i) for i in order[:k]]


# ------------------------------------------------------------------------------------------------------------------
# Detection


@dataclass(frozen=True)
class Conflict:
    a: Document
    b: Document
    kind: str  # which heuristic fired: 'numeric' or 'signal'
    reason: str
    topic_sim: float
    evidence: tuple  # what disagrees: (values or tokens of a, values or tokens of b)


@dataclass(frozen=True)
class ConflictReport:
    conflicts: tuple = ()
    pairs_checked: int = 0  # pairs at or above the topic-similarity gate

    @property
    def has_conflict(self):
        return bool(self.conflicts)


@dataclass(frozen=True)
class DocFeatures:
    numbers: frozenset
    signals: frozenset  # negation and directional tokens present


def doc_features(doc):
    """Per-document features, computed once per document and shared by all its pairs."""
    words = set(tokens(doc.content))
    return DocFeatures(extract_numbers(doc.content), frozenset(words & SIGNAL_TOKENS))


def numeric_contradiction(fa, fb):
    """Both sides state meaningful numbers and share none: {'$4.2M'} vs {'$6.8M'} -> fires."""
    if fa.numbers and fb.numbers and not fa.numbers & fb.numbers:
        return "numeric", "numerical contradiction", (sorted(fa.numbers), sorted(fb.numbers))
    return None


def signal_asymmetry(fa, fb):
    """A negation or direction word on one side only: {'increased'} vs {} -> fires."""
    only_a, only_b = fa.signals - fb.signals, fb.signals - fa.signals
    if only_a or only_b:
        return "signal", "contradiction-signal asymmetry", (sorted(only_a), sorted(only_b))
    return None


class ConflictDetector:
    """Flags conflicting pairs among retrieved documents, reusing their embeddings (no re-encoding per pair).

    check_pair is the extension point: subclass and override it (or pass other heuristics) to add detectors.
    """

    def __init__(self, threshold, heuristics=(numeric_contradiction, signal_asymmetry)):
        self.threshold = threshold
        self.heuristics = heuristics

    def detect(self, docs, vectors, question="", question_vector=None):
        """docs: k Documents; vectors: (k, dim) L2-normalised embeddings of those documents, same order.

        The article's heuristics ignore the question; question-aware subclasses use it.
        """
        sims = normalise(vectors) @ normalise(vectors).T  # all pairwise topic similarities in one product
        features = [doc_features(d) for d in docs]
        conflicts, checked = [], 0
        for i in range(len(docs)):
            for j in range(i + 1, len(docs)):
                if sims[i, j] < self.threshold:
                    continue  # different topics: skipped before any text work
                checked += 1
                found = self.check_pair(docs[i], docs[j], features[i], features[j], float(sims[i, j]))
                if found:
                    conflicts.append(found)
        return ConflictReport(tuple(conflicts), checked)

    def check_pair(self, a, b, fa, fb, topic_sim):
        """First heuristic that fires on a topically similar pair, as a Conflict; None when all agree."""
        for heuristic in self.heuristics:
            fired = heuristic(fa, fb)
            if fired:
                kind, reason, evidence = fired
                return Conflict(a, b, kind, reason, topic_sim, evidence)
        return None


# ------------------------------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class Cluster:
    members: tuple  # Documents connected by conflicts, in rank order
    kept: Document | None  # None when the cluster is disputed: nothing says which document is current
    discarded: tuple
    kind: str = "superseded"  # 'superseded' (its documents can be ordered) or 'disputed'
    basis: str | None = "date"  # what ordered it: 'date', 'version' or 'cue'; None when disputed


@dataclass(frozen=True)
class Resolution:
    kept: tuple  # Retrieved, in rank order: non-conflicting documents plus each cluster's winner
    clusters: tuple


def conflict_components(docs, conflicts):
    """Connected components of the conflict graph, each in rank order; isolated documents are left out.

    [a, b, c, d] with conflicts a-b, b-c -> [(a, b, c)]
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
    return [tuple(g) for g in groups.values() if len(g) > 1]


def resolve_by_recency(retrieved, report):
    """The article's policy: keep the newest document of each conflict cluster, pass the others through.

    subtle: ties on date keep the higher-ranked document (retrieval order); undated documents count as oldest.
    """
    def newest(members):
        rank = {r.doc.source_id: i for i, r in enumerate(retrieved)}
        return max(members, key=lambda d: (date_key(d), -rank[d.source_id])), "date"

    return resolve(retrieved, report, newest)


def resolve_by_kind(retrieved, report):
    """Superseded clusters keep their newest document; disputed ones keep every member and are marked disputed."""
    return resolve(retrieved, report, supersession_order)


def resolve(retrieved, report, pick):
    """Apply pick(members) -> (kept or None, basis) to each conflict cluster; non-conflicting documents pass."""
    clusters, dropped = [], set()
    for members in conflict_components([r.doc for r in retrieved], report.conflicts):
        kept, basis = pick(members)
        discarded = tuple(d for d in members if kept is not None and d is not kept)
        clusters.append(Cluster(members, kept, discarded, "superseded" if kept else "disputed", basis))
        dropped.update(d.source_id for d in discarded)
    kept = tuple(r for r in retrieved if r.doc.source_id not in dropped)
    return Resolution(kept, tuple(clusters))


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


@dataclass(frozen=True)
class Answer:
    text: str
    confidence: float  # p_start * p_end of the span, in [0, 1]
    start: int = -1  # character offset of the span in the context, -1 when there is none


def softmax(x):
    z = np.exp(x - np.max(x))
    return z / z.sum()


def best_span(start_logits, end_logits, context_mask, max_answer_tokens):
    """Most probable answer span (start, end, probability) over context tokens, or None without context.

    Probabilities are softmaxes over the context tokens plus token 0 ([CLS], SQuAD 2.0's "no answer"), so a
    model that prefers no answer yields a low confidence. Worked example: start logits peak at 3, end logits
    at 5, mask all-context -> (3, 5, p).
    """
    mask = np.asarray(context_mask, dtype=bool)
    if not mask.any():
        return None
    allowed = mask.copy()
    allowed[0] = True
    p_start = softmax(np.where(allowed, start_logits, -np.inf)) * mask
    p_end = softmax(np.where(allowed, end_logits, -np.inf)) * mask
    scores = np.triu(np.outer(p_start, p_end))  # end >= start
    scores = np.tril(scores, max_answer_tokens - 1)  # end - start < max_answer_tokens
    start, end = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(start), int(end), float(scores[start, end])


class TransformersReader:
    """Extractive QA over long contexts: sliding windows, spans decoded from start/end logits (no pipeline())."""

    def __init__(self, path, cfg):
        import torch
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        self.torch, self.cfg = torch, cfg
        self.tokenizer = AutoTokenizer.from_pretrained(path)  # a fast tokenizer: offsets map spans to characters
        self.model = AutoModelForQuestionAnswering.from_pretrained(path).eval()

    def __call__(self, question, context):
        enc = self.tokenizer(question, context, truncation="only_second", max_length=self.cfg.max_seq_len,
                             stride=self.cfg.doc_stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, padding=True, return_tensors="pt")
        inputs = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
        with self.torch.no_grad():
            out = self.model(**inputs)
        best = None
        for w in range(inputs["input_ids"].shape[0]):
            mask = np.array([s == 1 for s in enc.sequence_ids(w)])
            span = best_span(out.start_logits[w].numpy(), out.end_logits[w].numpy(), mask,
                             self.cfg.max_answer_tokens)
            if span and (best is None or span[2] > best[0]):
                offsets = enc["offset_mapping"][w]
                best = (span[2], int(offsets[span[0]][0]), int(offsets[span[1]][1]))
        if best is None:
            return Answer("", 0.0)
        return Answer(" ".join(context[best[1]:best[2]].split()), best[0], best[1])  # a span may cross a blank line


class SentenceEmbedder:
    def __init__(self, path, cfg):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(path, device="cpu")
        self.batch = cfg.embed_batch

    def __call__(self, texts):
        return self.model.encode(list(texts), batch_size=self.batch, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


class ModelUnavailable(Exception):
    """A model could not be had; the message is one line saying which, why, and how to point at a local copy."""


def locate_model(name, what, flag, env, timeout):
    """A local directory for a model named by path or hub name, or ModelUnavailable within ~timeout seconds.

    Hub names are looked up in the local Hugging Face cache first; only then is the hub asked, once, with a
    short timeout, instead of the libraries' own minute-long retry loop when there is no network.
    """
    hint = f"download it where you have network and pass {flag} /path/to/model or set {env}"
    if os.path.isdir(name):
        if not os.path.isfile(os.path.join(name, "config.json")):
            raise ModelUnavailable(f"{what} model directory '{name}' has no config.json, so it holds no model; {hint}")
        return name
    if name.startswith((".", "/", "~")) or os.path.exists(name):
        raise ModelUnavailable(f"{what} model directory '{name}' does not exist; {hint}")
    from huggingface_hub import snapshot_download

    with contextlib.suppress(Exception):
        return snapshot_download(name, local_files_only=True)
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        raise ModelUnavailable(f"{what} model '{name}' is not in the local cache and HF_HUB_OFFLINE is set; {hint}")
    reason = hub_unreachable(name, timeout)
    if reason:
        raise ModelUnavailable(f"{what} model '{name}' is not cached and the hub is unreachable ({reason}); {hint}")
    try:
        return snapshot_download(name)
    except Exception as e:  # the hub answered but the download failed: name it, don't dump a traceback
        raise ModelUnavailable(f"{what} model '{name}' could not be downloaded ({type(e).__name__}); {hint}")


def hub_unreachable(name, timeout):
    """None when the hub answers for this model within timeout seconds, else a short reason."""
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/api/models/{name}", method="HEAD"),
                               timeout=timeout)
        return None
    except urllib.error.HTTPError as e:
        return None if e.code in (401, 403) else f"HTTP {e.code}"  # gated models still download with a token
    except (urllib.error.URLError, OSError) as e:
        return str(getattr(e, "reason", e)) or type(e).__name__


def load_models(cfg, quiet):
    """(embed, read) callables for the configured models; ModelUnavailable when either can't be had."""
    if quiet:
        silence_model_libraries()
    embed_dir = locate_model(cfg.embed_model, "embedding", "--embed-model", "RAG_EMBED_MODEL", cfg.hub_timeout)
    qa_dir = locate_model(cfg.qa_model, "QA", "--qa-model", "RAG_QA_MODEL", cfg.hub_timeout)
    if quiet:
        silence_model_libraries()  # the libraries are imported now; set their own switches too
    loaded = []
    for what, cls, path in (("embedding", SentenceEmbedder, embed_dir), ("QA", TransformersReader, qa_dir)):
        log.info("loading %s model from %s", what, path)
        try:
            loaded.append(cls(path, cfg))
        except (OSError, ValueError, KeyError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ModelUnavailable(f"{what} model at '{path}' could not be loaded: {first}")
    return loaded[0], loaded[1]


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
# The pipeline


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
    label: str = "ANSWERED"  # ANSWERED: nothing acted on; RESOLVED: all clusters superseded; UNCERTAIN: any disputed
    candidates: tuple = ()  # Candidate answers, one per document of a disputed cluster


@dataclass(frozen=True)
class Candidate:
    doc: Document
    answer: str
    confidence: float


CONTEXT_SEPARATOR = "\n\n"


STRATEGIES = {"kind": resolve_by_kind, "recency": resolve_by_recency}


def run_query(query, index, embed, detector, read, k, resolve, strategy="kind"):
    """Retrieve top-k, detect conflicts, optionally resolve them, then read; one RAGResponse.

    A disputed cluster withholds the answer: the reader runs on each of its documents alone and every candidate
    is reported, so nothing is picked silently.
    """
    query_vector = embed([query])[0]
    retrieved = retrieve(index, query_vector, k)
    report = detector.detect([r.doc for r in retrieved], index.vectors[[r.row for r in retrieved]], query,
                             query_vector)
    for c in report.conflicts:
        log.warning("conflict: %s vs %s, %s (topic similarity %.2f)", c.a.source_id, c.b.source_id, c.reason,
                    c.topic_sim)
    context, clusters = tuple(retrieved), ()
    if resolve and report.has_conflict:
        resolution = STRATEGIES[strategy](retrieved, report)
        context, clusters = resolution.kept, resolution.clusters
    warning = describe(report, clusters, resolve)
    phase = "resolved" if resolve else "naive"
    disputed = [d for c in clusters if c.kind == "disputed" for d in c.members]
    if disputed:
        candidates = tuple(Candidate(d, *dataclasses.astuple(read(query, d.content))[:2]) for d in disputed)
        return RAGResponse(query, phase, "", 0.0, tuple(retrieved), context, report, clusters, warning,
                           tuple(d.source_id for d in disputed), "UNCERTAIN", candidates)
    answer = read(query, CONTEXT_SEPARATOR.join(r.doc.content for r in context))
    return RAGResponse(query, phase, answer.text, answer.confidence, tuple(retrieved), context, report, clusters,
                       warning, cited_ids(context, answer), "RESOLVED" if clusters else "ANSWERED")


def cited_ids(context, answer):
    """The source_id of the document the answer span starts in: contexts are joined with CONTEXT_SEPARATOR."""
    if not answer.text or answer.start < 0:
        return ()
    end = 0
    for r in context:
        end += len(r.doc.content)
        if answer.start < end:
            return (r.doc.source_id,)
        end += len(CONTEXT_SEPARATOR)
    return ()


def result_json(resp):
    """One phase's RESULT object of --json; field names are a documented contract."""
    return {
        "answer": resp.answer or None,
        "confidence": round(resp.confidence, 6),
        "label": resp.label,
        "sources": [{"source_id": r.doc.source_id, "title": r.doc.title, "date": r.doc.date,
                     "version": r.doc.version, "score": round(r.score, 6)} for r in resp.context],
        "conflicts": [conflict_json(c) for c in resp.report.conflicts],
        "clusters": [{"members": [d.source_id for d in c.members], "kept": c.kept.source_id if c.kept else None,
                      "discarded": [d.source_id for d in c.discarded], "kind": c.kind, "basis": c.basis}
                     for c in resp.clusters],
        "cited_source_ids": list(resp.cited),
        "warning": resp.warning,
        "candidates": [{"source_id": c.doc.source_id, "answer": c.answer or None, "confidence": round(c.confidence, 6)}
                       for c in resp.candidates],
    }


def conflict_json(c):
    return {"a": c.a.source_id, "b": c.b.source_id, "reason": c.reason, "kind": c.kind,
            "topic_sim": round(c.topic_sim, 6), "evidence": [list(side) for side in c.evidence]}


def conflict_log_lines(resp, now):
    """--log-conflicts records of one resolved response: one per detected conflict, with what became of it."""
    fate = {}
    for cl in resp.clusters:
        for d in cl.members:
            fate[d.source_id] = {"kind": cl.kind, "kept": cl.kept.source_id if cl.kept else None,
                                 "discarded": [x.source_id for x in cl.discarded]}
    return [{"time": now, "query": resp.query, **conflict_json(c), "resolution": fate.get(c.a.source_id)}
            for c in resp.report.conflicts]


def describe(report, clusters, resolved):
    """The warning in words: what conflicted and what was done about it; None without conflict."""
    if not report.has_conflict:
        return None
    pairs = "; ".join(f"{c.a.title} vs {c.b.title} ({c.reason})" for c in report.conflicts)
    if not resolved:
        return f"The retrieved sources contradict each other ({pairs}); the answer was read from all of them."
    done = []
    for c in clusters:
        if c.kind == "disputed":
            names = ", ".join(d.title for d in c.members)
            done.append(f"{names} disagree and nothing says which is current, so no answer was picked: every "
                        f"candidate answer is reported and all of them are cited")
        else:
            gone = ", ".join(f"{d.title} ({stamp(d)}), which said {said(d, report)}" for d in c.discarded)
            done.append(f"kept {c.kept.title} ({stamp(c.kept)}, newest by {c.basis}), discarded {gone}")
    return f"The retrieved sources contradict each other ({pairs}); " + "; ".join(done) + "."


def stamp(doc):
    """What dates a document in messages: '2024-04-03', 'v2.0', or 'undated'."""
    return doc.date or (f"v{doc.version.lstrip('v')}" if doc.version else "undated")


def said(doc, report):
    """What a document said in the first conflict it is part of: its side of the evidence."""
    for c in report.conflicts:
        for side, d in enumerate((c.a, c.b)):
            if d is doc and c.evidence[side]:
                return ", ".join(map(str, c.evidence[side]))
    return "something else"


# ------------------------------------------------------------------------------------------------------------------
# Rendering

ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


class Painter:
    """The one place that knows about colour. roles: title, label, conflict, resolved, uncertain, ok, error, dim."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.styles = {}
        if enabled:
            import colorama

            colorama.just_fix_windows_console()
            f, s = colorama.Fore, colorama.Style
            self.styles = {"title": s.BRIGHT + f.CYAN, "label": s.BRIGHT, "conflict": s.BRIGHT + f.YELLOW,
                           "resolved": s.BRIGHT + f.GREEN, "ok": f.GREEN, "error": s.BRIGHT + f.RED,
                           "uncertain": s.BRIGHT + f.MAGENTA,
                           "dim": s.DIM}
        self.reset = "\x1b[0m" if enabled else ""

    def __call__(self, text, role):
        style = self.styles.get(role, "")
        return f"{style}{text}{self.reset}" if style else text


def colour_wanted(no_color_flag, stream):
    return not no_color_flag and "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def render_block(resp, paint, cfg):
    """One scenario of one phase: query, answer, confidence, conflict status, sources, conflicts, resolution."""
    status = ("NO", "ok")
    if resp.report.has_conflict:
        status = {"UNCERTAIN": ("UNCERTAIN - sources disagree", "uncertain"), "RESOLVED": ("RESOLVED", "resolved")}.get(
            resp.label, ("YES - see warning", "conflict"))
    indent = " " * 12  # under the answer column: len("Answer:     ")
    shown = resp.answer or ("(withheld: the sources disagree, see candidates)" if resp.candidates else "(no answer)")
    answer = textwrap.fill(shown, cfg.answer_width, initial_indent=indent,
                           subsequent_indent=indent, break_on_hyphens=False).lstrip()
    lines = [f"{paint('Query:', 'label')}      {resp.query}",
             f"{paint('Answer:', 'label')}     {answer}",
             f"{paint('Confidence:', 'label')} {resp.confidence:.1%}",
             f"{paint('Conflict:', 'label')}   {paint(status[0], status[1])}",
             f"{paint('Sources:', 'label')}"]
    used = {r.doc.source_id for r in resp.context}
    for r in resp.sources:
        mark = "" if r.doc.source_id in used else paint("  (discarded)", "dim")
        lines.append(f"  [{r.score:.3f}] {r.doc.title} ({r.doc.date or 'undated'}){mark}")
    for c in resp.report.conflicts:
        lines.append(paint(f"  ! {c.a.title} vs {c.b.title}: {c.reason}, topic similarity {c.topic_sim:.2f}, "
                           f"{format_evidence(c.evidence)}", "conflict"))
    for cl in resp.clusters:
        if cl.kind == "disputed":
            names = " and ".join(f"'{d.title}'" for d in cl.members)
            lines.append(paint(f"  Conflict cluster disputed: {names} disagree and nothing says which is current; "
                               f"kept all, picked none.", "uncertain"))
        else:
            lines.append(paint(f"  Conflict cluster resolved: kept '{cl.kept.title}' ({stamp(cl.kept)}), "
                               f"discarded {len(cl.discarded)} older doc(s).", "resolved"))
    for c in resp.candidates:
        lines.append(paint(f"  ? candidate from '{c.doc.title}': {c.answer or '(none)'} ({c.confidence:.1%})",
                           "uncertain"))
    if resp.warning:
        role = {"ANSWERED": "conflict", "RESOLVED": "resolved"}.get(resp.label, "uncertain")
        lines.append(paint("Warning:", role) + " "
                     + textwrap.fill(resp.warning, cfg.answer_width + 14, subsequent_indent="  ",
                                     break_on_hyphens=False))
    return "\n".join(lines)


def format_evidence(evidence):
    """(['$4.2M'], ['$6.8M']) -> "$4.2M vs $6.8M"; an empty side shows as '-'."""
    return " vs ".join(", ".join(map(str, side)) or "-" for side in evidence)


def clip(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def render_table(names, naive, resolved, paint, cfg):
    """Side-by-side: scenario | naive answer (confidence) | resolved answer (confidence) | what changed."""
    w = cfg.table_width
    head = f"{'Scenario':<22} | {'Naive answer':<{w}} | {'Resolved answer':<{w}} | What changed"
    lines = [paint(head, "label"), "-" * (len(head) + 20)]
    for name, n, r in zip(names, naive, resolved):
        cells = [clip(table_answer(a), w) for a in (n, r)]
        change, role = what_changed(n, r)
        lines.append(f"{clip(name, 22):<22} | {cells[0]:<{w}} | {cells[1]:<{w}} | {paint(change, role)}")
    return "\n".join(lines)


def table_answer(resp):
    """'$6.8M (87%)'; for a withheld answer its candidates: 'UNCERTAIN: ACTIVE | INACTIVE'."""
    if resp.candidates:
        return "UNCERTAIN: " + " | ".join(c.answer or "(none)" for c in resp.candidates)
    return f"{resp.answer or '(none)'} ({resp.confidence:.0%})"


def what_changed(naive, resolved):
    """A short phrase and its colour role, e.g. ('answer changed; dropped Q4-2023-Earnings-Release', 'resolved')."""
    if not resolved.clusters:
        return "no conflict; same context", "ok"
    if resolved.candidates:
        return f"answer withheld: {len(resolved.candidates)} sources disagree, none is newer", "uncertain"
    dropped = ", ".join(d.title for c in resolved.clusters for d in c.discarded)
    verb = "answer changed" if naive.answer != resolved.answer else "same answer"
    return f"{verb}; dropped {dropped}", "resolved"


# ------------------------------------------------------------------------------------------------------------------
# CLI


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, not argparse's usage block
        raise UsageError(message)


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    return value


def unit_float(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got '{text}'")
    return value


def parse_args(argv):
    p = Parser(prog="rag_conflict_demo.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quiet", action="store_true", help="demo output only: no logs, no model-loading chatter")
    p.add_argument("--no-color", action="store_true", help="plain text, no ANSI escapes")
    p.add_argument("--test", action="store_true", help="run the embedded unittest suite and exit")
    p.add_argument("--embed-model", default=os.environ.get("RAG_EMBED_MODEL") or Config.embed_model,
                   help="embedding model: hub name or local directory (env RAG_EMBED_MODEL; default %(default)s)")
    p.add_argument("--qa-model", default=os.environ.get("RAG_QA_MODEL") or Config.qa_model,
                   help="extractive QA model: hub name or local directory (env RAG_QA_MODEL; default %(default)s)")
    p.add_argument("--kb", metavar="PATH", help="your knowledge base: JSON {\"documents\": [...], \"questions\": "
                   "[...]} or JSON Lines, one document per line (see README)")
    p.add_argument("--question", action="append", default=[], metavar="TEXT",
                   help="a question to ask (repeatable); with --kb, needed unless the file has questions")
    p.add_argument("--top-k", type=positive_int, default=Config.top_k, metavar="N",
                   help="documents retrieved per question (default %(default)s)")
    p.add_argument("--threshold", type=unit_float, default=Config.threshold, metavar="X",
                   help="topic-similarity gate of the detector, in [0, 1] (default %(default)s)")
    p.add_argument("--json", action="store_true", help="JSON Lines on stdout, one object per question")
    p.add_argument("--log-conflicts", metavar="PATH", help="append one JSON line per detected conflict to PATH")
    return p.parse_args(argv)


def setup_logging(quiet):
    handler = logging.StreamHandler(sys.stderr)  # resolved now, so tests that redirect stderr capture logs
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.ERROR if quiet else logging.INFO)


def error(message):
    """One line on stderr, red when stderr is a terminal and colour is allowed."""
    paint = Painter(colour_wanted(False, sys.stderr))
    print(paint(f"error: {message}", "error"), file=sys.stderr)


def note(message):
    print(f"note: {message}", file=sys.stderr)


def experiment_inputs(args):
    """(documents, [(name, question)]) from the flags: the built-in scenarios, or --kb and its questions."""
    if args.kb:
        docs, questions = load_kb(args.kb)
    else:
        docs, questions = KNOWLEDGE_BASE, []
    questions += [check_question(q, f"--question {i}") for i, q in enumerate(args.question, 1)]
    if args.kb and not questions:
        raise UsageError(f"{args.kb}: no questions; add --question TEXT or a \"questions\" list to the file")
    if not args.kb and not args.question:
        return docs, list(SCENARIOS)
    return docs, [(f"Q{i}: {q}", q) for i, q in enumerate(questions, 1)]


def check_log_path(path):
    """--log-conflicts must name a file we can append to; checked before any work is done."""
    if os.path.isdir(path):
        raise UsageError(f"--log-conflicts {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--log-conflicts {path}: directory {parent} does not exist")
    if not os.access(path if os.path.exists(path) else parent, os.W_OK):
        raise UsageError(f"--log-conflicts {path}: not writable")


def main(argv=None, embed=None, read=None):
    """The experiment; embed and read are seams for tests (fakes skip model loading)."""
    try:
        args = parse_args(argv)
        if args.test:
            return run_tests()
        setup_logging(args.quiet)
        docs, questions = experiment_inputs(args)
        if args.log_conflicts:
            check_log_path(args.log_conflicts)
    except UsageError as e:
        error(str(e))
        return 2
    cfg = Config(embed_model=args.embed_model, qa_model=args.qa_model, top_k=args.top_k, threshold=args.threshold)
    if cfg.top_k > len(docs):
        note(f"--top-k {cfg.top_k} is larger than the knowledge base ({len(docs)} documents); using {len(docs)}")
        cfg.top_k = len(docs)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no fork warnings from the tokenizers library
    if embed is None or read is None:
        try:
            embed, read = load_models(cfg, args.quiet)
        except ModelUnavailable as e:
            error(str(e))
            return 1
    index = build_index(docs, embed, cfg.embed_batch, None if args.quiet else Progress("embedding documents"))
    log.info("indexed %d documents", len(index.docs))
    detector = ConflictDetector(cfg.threshold)
    naive, resolved = ([run_query(q, index, embed, detector, read, cfg.top_k, phase) for _, q in questions]
                       for phase in (False, True))
    if args.json:
        for n, r in zip(naive, resolved):
            print(json.dumps({"query": n.query, "naive": result_json(n), "resolved": result_json(r)}))
    else:
        print_walkthrough([name for name, _ in questions], naive, resolved,
                          Painter(colour_wanted(args.no_color, sys.stdout)), cfg)
    if args.log_conflicts:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with open(args.log_conflicts, "a", encoding="utf-8") as f:  # append: never truncate a user's log
            for r in resolved:
                f.writelines(json.dumps(line) + "\n" for line in conflict_log_lines(r, now))
    return 0


def print_walkthrough(names, naive, resolved, paint, cfg):
    rule = "=" * 100
    for title, responses in (("PHASE 1 - NAIVE RAG: the whole top-k goes to the reader", naive),
                             ("PHASE 2 - CONFLICT-AWARE RAG: detect, resolve by recency, then read", resolved)):
        print(paint(f"\n{rule}\n{title}\n{rule}", "title"))
        for name, resp in zip(names, responses):
            print(paint(f"\n--- {name} ---", "title"))
            print(render_block(resp, paint, cfg))
    print(paint(f"\n{rule}\nSIDE BY SIDE\n{rule}", "title"))
    print(render_table(names, naive, resolved, paint, cfg))


# ------------------------------------------------------------------------------------------------------------------
# Tests


def fake_embed(texts):
    """Topic vectors from keywords: a test embedder that needs no model. Axes: finance, hr, api, other."""
    axes = (("revenue", "restated", "fiscal", "earnings"), ("remote", "office", "attendance", "policy"),
            ("api", "rate", "limit", "requests"), ("laptop", "encryption", "denver", "token"))
    rows = []
    for t in texts:
        words = tokens(t)
        rows.append([sum(words.count(k) for k in axis) for axis in axes] + [0.1])
    return normalise(np.array(rows, dtype=np.float32))


def fake_read(question, context):
    """The first sentence of the context, with a confidence that grows with its length: a stand-in reader."""
    first = re.split(r"(?<=[.!?])\s", context.strip(), maxsplit=1)[0]
    return Answer(first, min(1.0, len(first) / 200), context.index(first) if first else -1)


def doc(source_id, content, date="2024-01-01", title=None):
    return Document(source_id, title or source_id, date, content)


class TestNumbers(unittest.TestCase):
    def test_article_case(self):
        self.assertEqual(extract_numbers(KNOWLEDGE_BASE[0].content), {"$4.2M"})
        self.assertEqual(extract_numbers(KNOWLEDGE_BASE[1].content), {"$6.8M"})

    def test_years_and_small_integers_skipped(self):
        self.assertEqual(extract_numbers("In 2023 we had 3 offices and 1999 staff"), set())

    def test_formats(self):
        found = extract_numbers("Costs were $1,200.50, margin 12.5%, 3.5B users, 100 requests, v1.2, FY2023")
        self.assertEqual(found, {"$1,200.50", "12.5%", "3.5B", "100"})

    def test_decimal_year_kept(self):
        self.assertEqual(extract_numbers("ratio 2023.5"), {"2023.5"})


class TestHeuristics(unittest.TestCase):
    def features(self, text):
        return doc_features(doc("x", text))

    def test_numeric_fires_on_disjoint_sets(self):
        fired = numeric_contradiction(self.features("revenue $4.2M"), self.features("revenue $6.8M"))
        self.assertEqual(fired[2], (["$4.2M"], ["$6.8M"]))

    def test_numeric_quiet_when_a_number_is_shared(self):
        self.assertIsNone(numeric_contradiction(self.features("100 and 429"), self.features("500 and 429")))

    def test_numeric_needs_numbers_on_both_sides(self):
        self.assertIsNone(numeric_contradiction(self.features("revenue $4.2M"), self.features("revenue grew")))

    def test_signal_asymmetry_negation_and_direction(self):
        fired = signal_asymmetry(self.features("It is no longer required"), self.features("It is required"))
        self.assertEqual(fired[2], (["no"], []))
        fired = signal_asymmetry(self.features("limit 100"), self.features("limit increased to 500"))
        self.assertEqual(fired[2], ([], ["increased"]))

    def test_signal_quiet_when_both_share_it(self):
        self.assertIsNone(signal_asymmetry(self.features("not now"), self.features("not later")))

    def test_token_sets_are_separate_and_unioned(self):
        self.assertFalse(NEGATION_TOKENS & DIRECTIONAL_TOKENS)
        self.assertEqual(SIGNAL_TOKENS, NEGATION_TOKENS | DIRECTIONAL_TOKENS)


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
        for (_, query), pair in zip(SCENARIOS, (("fin-001", "fin-002"), ("hr-001", "hr-002"),
                                                 ("api-001", "api-002"))):
            retrieved = retrieve(index, fake_embed([query])[0], 3)
            report = ConflictDetector(0.68).detect([r.doc for r in retrieved], index.vectors[[r.row for r in retrieved]])
            flagged = {(c.a.source_id, c.b.source_id) for c in report.conflicts}
            self.assertIn(pair, {tuple(sorted(p)) for p in flagged})

    def test_extension_point(self):
        class Always(ConflictDetector):
            def check_pair(self, a, b, fa, fb, topic_sim):
                return Conflict(a, b, "custom", "always", topic_sim, ((), ()))

        report = Always(0.0).detect([doc("a", "x"), doc("b", "y")], np.eye(2))
        self.assertEqual(report.conflicts[0].kind, "custom")

    def test_empty_and_single(self):
        self.assertEqual(ConflictDetector(0.68).detect([], np.zeros((0, 4))).conflicts, ())
        self.assertEqual(ConflictDetector(0.68).detect([doc("a", "$1M")], np.ones((1, 4))).conflicts, ())


def retrieved_of(*docs):
    return [Retrieved(d, 1.0 - i / 10, i) for i, d in enumerate(docs)]


def conflict(a, b):
    return Conflict(a, b, "numeric", "test", 0.9, ((), ()))


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
        self.assertEqual(res.clusters[0].kept, a)
        undated = doc("u", "3", None)
        res = resolve_by_recency(retrieved_of(undated, self.old), ConflictReport((conflict(undated, self.old),), 1))
        self.assertEqual(res.clusters[0].kept, self.old)


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
        self.assertEqual(([r.doc for r in res.kept], res.clusters[0].kind), ([a, b], "disputed"))
        self.assertIsNone(res.clusters[0].kept)
        res = resolve_by_recency(retrieved_of(a, b), ConflictReport((conflict(a, b),), 1))
        self.assertEqual(res.clusters[0].kept, a)  # the article's policy picks anyway (higher rank)


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


def run_main(argv, env=None):
    """main(argv) with fakes, returning (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv, embed=fake_embed, read=fake_read)
    return code, out.getvalue(), err.getvalue()


class TestMain(unittest.TestCase):
    def test_walkthrough_blocks(self):
        code, out, err = run_main(["--no-color"])
        self.assertEqual(code, 0)
        self.assertNotIn("\x1b", out)
        naive, resolved = out.split("PHASE 2")
        self.assertEqual(naive.count("YES - see warning"), 3)
        self.assertNotIn("RESOLVED", naive)
        self.assertEqual(resolved.count("Conflict:   RESOLVED"), 3)
        self.assertIn("Conflict cluster resolved: kept '2023-Annual-Report-Revised' (2024-04-03), discarded 1 older "
                      "doc(s).", resolved)
        self.assertIn("[", naive.split("Sources:")[1])
        self.assertIn("numerical contradiction", naive)
        self.assertIn("$4.2M vs $6.8M", naive)
        self.assertIn("WARNING conflict: fin-001 vs fin-002", err)
        self.assertIn("INFO indexed", err)
        table = out.split("SIDE BY SIDE")[1]
        self.assertIn("answer changed; dropped Q4-2023-Earnings-Release", table)

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

    def test_no_color_env(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True

        self.assertTrue(colour_wanted(False, Tty()))
        with unittest.mock.patch.dict(os.environ, {"NO_COLOR": "1"}):
            self.assertFalse(colour_wanted(False, Tty()))
        self.assertFalse(colour_wanted(True, Tty()))


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

    def test_json_round_trip_field_by_field(self):
        path = self.json_kb(questions=["What was Initech's fiscal 2022 revenue?"])
        rows = self.run_json(["--kb", path, "--question", "How are laptops protected?", "--top-k", "2"])
        self.assertEqual([r["query"] for r in rows], ["What was Initech's fiscal 2022 revenue?",
                                                      "How are laptops protected?"])
        naive, resolved = rows[0]["naive"], rows[0]["resolved"]
        self.assertEqual(set(naive), {"answer", "confidence", "label", "sources", "conflicts", "clusters",
                                      "cited_source_ids", "warning", "candidates"})
        self.assertEqual({s["source_id"] for s in naive["sources"]}, {"r-old", "r-new"})
        self.assertEqual(set(naive["sources"][0]), {"source_id", "title", "date", "version", "score"})
        new = next(s for s in naive["sources"] if s["source_id"] == "r-new")
        self.assertEqual((new["title"], new["date"], new["version"]), ("r-new", "2023-06-01T09:00:00", "2.0.1"))
        (c,) = naive["conflicts"]
        self.assertEqual(({c["a"], c["b"]}, c["kind"]), ({"r-old", "r-new"}, "numeric"))
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

    def test_unknown_fields_are_kept(self):
        docs, _ = load_kb(self.json_kb())
        self.assertEqual(docs[1].extra, {"owner": "finance"})
        self.assertEqual(docs[2].version, "3")

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

    def test_builtin_scenarios_take_the_new_flags(self):
        rows = self.run_json(["--top-k", "2", "--threshold", "0.5"])
        self.assertEqual(len(rows), 3)
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
        self.assertEqual(err.getvalue().splitlines()[-1].split(" (")[0], "embedding documents: 10/10")

    def test_json_keeps_stdout_clean(self):
        code, out, err = run_main(["--json"])
        self.assertEqual(code, 0)
        self.assertTrue(all(line.startswith("{") for line in out.splitlines()))
        self.assertIn("WARNING conflict", err)

    def test_bad_input(self):
        ok = json.dumps({"documents": KB_DOCS})
        doc0 = {"source_id": "a", "content": "x"}
        cases = [  # (name, file text or None, extra argv, message)
            ("missing file", None, [], "no such file"),
            ("directory", "DIR", [], "is a directory"),
            ("non-UTF-8", b"\xff\xfe{", [], "not UTF-8 text (byte 0xff at offset 0)"),
            ("invalid JSON", '{"documents": [\n  {"source_id": }]}', [], "invalid JSON at line 2, column 17"),
            ("invalid JSONL", json.dumps(doc0) + "\n{oops\n", [], "invalid JSON Lines at line 2, column 2"),
            ("top level list", json.dumps([doc0]), [], "top level must be an object"),
            ("no documents key", json.dumps({"docs": [doc0]}), [], "without a 'documents' list"),
            ("no documents", json.dumps({"documents": []}), [], "no documents"),
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


def local_embed_dir():
    path = os.environ.get("RAG_EMBED_MODEL", "")
    return path if os.path.isdir(path) else None


@unittest.skipUnless(local_embed_dir(), "set RAG_EMBED_MODEL to a local model directory for integration tests")
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

    def test_scenarios_retrieve_flag_and_keep_newest(self):
        detector = ConflictDetector(self.cfg.threshold)
        for (_, query), (old, new) in zip(SCENARIOS, (("fin-001", "fin-002"), ("hr-001", "hr-002"),
                                                       ("api-001", "api-002"))):
            with self.subTest(query=query):
                retrieved = retrieve(self.index, self.embed([query])[0], 3)
                self.assertLessEqual({old, new}, {r.doc.source_id for r in retrieved})
                report = detector.detect([r.doc for r in retrieved], self.index.vectors[[r.row for r in retrieved]])
                self.assertIn({old, new}, [{c.a.source_id, c.b.source_id} for c in report.conflicts])
                resolution = resolve_by_recency(retrieved, report)
                kept = {r.doc.source_id for r in resolution.kept}
                self.assertIn(new, kept)
                self.assertNotIn(old, kept)

    def test_reader_loads_and_decodes_a_span(self):
        read = TransformersReader(self.qa_dir, self.cfg)
        context = " ".join(d.content for d in KNOWLEDGE_BASE) * 4  # long: several windows
        answer = read("What was the revenue?", context)
        self.assertIn(answer.text, context)
        self.assertTrue(answer.text)
        self.assertGreaterEqual(answer.confidence, 0.0)
        self.assertLessEqual(answer.confidence, 1.0)

    def test_main_end_to_end_with_local_models(self):
        code, out, err = io.StringIO(), io.StringIO(), None
        with contextlib.redirect_stdout(code), contextlib.redirect_stderr(out):
            status = main(["--quiet", "--no-color", "--embed-model", self.cfg.embed_model, "--qa-model", self.qa_dir])
        self.assertEqual(status, 0, out.getvalue())
        self.assertEqual(code.getvalue().count("Conflict:   RESOLVED"), 3)
        self.assertEqual(out.getvalue(), "")


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


def run_tests():
    """Run the suite; the last line on stdout is 'N passed, M failed' (', K skipped' when any)."""
    import unittest.mock  # noqa: F401  (tests patch os.environ)

    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    print(f"{passed} passed, {failed} failed{skipped}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
