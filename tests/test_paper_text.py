"""paper/paper.md is JOSS-shaped: 250–1000 words in the body, claims kept honest."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _body(path):
    text = path.read_text().split("---", 2)[2]                 # YAML front matter
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return text.split("# References")[0]


def test_body_length_and_wording():
    for name in ("paper.md", "paper.template.md"):
        body = _body(ROOT / "paper" / name)
        words = len(re.findall(r"\S+", re.sub(r"[#*`$]", " ", body)))
        assert 250 <= words <= 1000, f"{name}: {words} words in the body"
        assert "is refuted" not in body and "first open" not in body.lower()
        assert "No open implementation" not in body
        assert "BSD-3-Clause" in body
        for section in ("# Summary", "# Statement of need", "# State of the field"):
            assert section in body, f"{name} lacks {section}"
        assert "benchmarks/peers.py" in body and "data/peers.csv" in body
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
