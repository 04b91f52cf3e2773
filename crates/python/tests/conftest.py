"""Shared fixtures: a small corpus on disk and a real index built from it with the real
local model (the same all-MiniLM-L6-v2 the Rust suite uses; scripts/fetch-model.sh)."""

from pathlib import Path

import pytest

import excerpt

CORPUS = {
    "keys.md": """# Key rotation

## Schedule

Signing keys are rotated every ninety days by the platform team. The old key stays
valid for seven more days so that tokens issued before the rotation still verify.

## Procedure

Run the rotation job from the operations console, then confirm that the new key id
appears in the JWKS document before announcing the change.
""",
    "garden.txt": """Tomatoes need six to eight hours of direct sunlight a day.
Water them deeply twice a week rather than a little every day, so that the roots grow
down into the soil. Pinch off the suckers that grow between the stem and the branches.
""",
    "trains.txt": """The night train from Vienna to Rome leaves at 19:40 and arrives the next
morning at 10:05. Sleeper cabins hold two or four berths; a shower is at the end of
each sleeping car. Breakfast is served in the cabin half an hour before arrival.
""",
}


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for name, text in CORPUS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def index(tmp_path_factory, corpus) -> Path:
    """An index directory with the corpus ingested."""
    path = tmp_path_factory.mktemp("index") / "idx"
    report = excerpt.Engine(path).ingest(corpus)
    assert report["added"] == len(CORPUS), report
    return path


@pytest.fixture(scope="session")
def engine(index) -> excerpt.Engine:
    return excerpt.Engine(index)
