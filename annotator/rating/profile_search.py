"""Ranking a user's past posts by relevance to a question or a search (BM25, from the bm25s library)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np


@dataclass(frozen=True)
class ProfileIndex:
    """A BM25 index over one profile's posts (their text and category)."""

    n_posts: int
    retriever: bm25s.BM25 | None  # None when no post has a searchable word

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every post for `query` (zeros when nothing matches)."""
        if self.retriever is None or not query.strip():
            return np.zeros(self.n_posts)
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
        known = [t for t in tokens if t in self.retriever.vocab_dict]
        if not known:
            return np.zeros(self.n_posts)
        return np.asarray(self.retriever.get_scores(known), dtype=float)


def _text(post: Mapping[str, Any]) -> str:
    return f"{post.get('category') or ''} {post.get('text') or ''}"


def build_index(posts: Sequence[Mapping[str, Any]]) -> ProfileIndex:
    """Index a profile's posts; an empty profile (or one without words) gives an index that ranks
    every post equal."""
    texts = [_text(post) for post in posts]
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=False)
    if not any(tokens):
        return ProfileIndex(n_posts=len(posts), retriever=None)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return ProfileIndex(n_posts=len(posts), retriever=retriever)


def rank(index: ProfileIndex, query: str) -> list[int]:
    """Post indices by decreasing relevance to `query`; ties keep the profile's order."""
    scores = index.scores(query)
    return [int(k) for k in np.argsort(-scores, kind="stable")]


def search(index: ProfileIndex, query: str) -> list[int]:
    """The posts that match `query` at all, most relevant first (empty for an empty query)."""
    scores = index.scores(query)
    return [int(k) for k in np.argsort(-scores, kind="stable") if scores[k] > 0]
