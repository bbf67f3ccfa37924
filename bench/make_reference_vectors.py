#!/usr/bin/env python3
"""Write the reference embeddings the encoder test compares against, computed once with
sentence-transformers (run in an environment that has it; blagent itself never needs it).

    python bench/make_reference_vectors.py MODEL_DIR tests/data/minilm_reference.json

The output is a new file or one of these vectors (`model`, `texts`, `vectors`), never a file in
MODEL_DIR (refused before the model is loaded).
"""

import json
import sys
from pathlib import Path

import safe_output

TEXTS = [
    'def apply_discount(total, percent):\n    """Apply a percentage discount."""\n    return total - total * percent / 100\n',
    "# django/db/models/query.py\nclass QuerySet:\n    def bulk_create(self, objs, batch_size=None, ignore_conflicts=False):\n        ...",
    "QuerySet.bulk_create() crashes with update_conflicts=True on PostgreSQL when the unique field is a db_column.",
    "Traceback (most recent call last):\n  File \"/venv/lib/python3.9/site-packages/django/db/models/query.py\", line 503, in bulk_create\nValueError: Unknown format code 'd' for object of type 'float'",
    "größe = Straße.länge(距离=1.5)  # unicode",
    "x",
    "word " * 400,
]


def main() -> None:
    model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    ours = safe_output.json_object_with("model", "texts", "vectors")
    safe_output.check(out, ours, "reference vectors: model, texts, vectors", folders=[model_dir])
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=False).tolist()
    reference = {
        "model": "all-MiniLM-L6-v2",
        "texts": TEXTS,
        "vectors": [[round(x, 7) for x in v] for v in vectors],
    }
    safe_output.write(out, json.dumps(reference))
    print(f"wrote {len(TEXTS)} vectors of {len(vectors[0])} to {out}")


if __name__ == "__main__":
    main()
