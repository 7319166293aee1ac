"""The test extra holds what the README's test command needs and no heavy peer: weaver-core (which
brings tensorboard, numba and scikit-learn) and the documentation tools (numpydoc brings Sphinx) are
in test-peers, which CI installs (without compiling the core again) to run the tests that need them."""
from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: modules of the heavy peers: a test that needs one is marked peers (or slow)
HEAVY = ("weaver", "numpydoc", "sphinx", "mkdocs", "tensorboard", "numba", "sklearn", "scipy")


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_test_extra_leaves_the_heavy_peers_to_test_peers():
    extras = PYPROJECT["project"]["optional-dependencies"]
    test, peers = _names(extras["test"]), extras["test-peers"]
    assert not test & {"weaver-core", "numpydoc", "mkdocs", "lstm_data"}, test
    assert "weaver-core>=0.5.3" in peers and "lstm_data[test,docs]" in peers


def _marked(node: ast.AST, mark: str) -> bool:
    return any(f"mark.{mark}" in ast.unparse(d) for d in getattr(node, "decorator_list", []))


def test_every_test_of_a_heavy_peer_is_marked_peers_or_slow():
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text()
        if "importorskip" not in text or not any(f'"{name}' in text for name in HEAVY):
            continue
        tree = ast.parse(text, str(path))
        module_marks = " ".join(ast.unparse(n) for n in tree.body if isinstance(n, ast.Assign)
                                and any(getattr(t, "id", "") == "pytestmark" for t in n.targets))
        if "peers" in module_marks or "slow" in module_marks:
            continue
        functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args):
                continue
            module = str(getattr(node.args[0], "value", ""))
            if module.split(".")[0] not in HEAVY:
                continue
            owner = next((f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)), None)
            if owner is None or not (_marked(owner, "peers") or _marked(owner, "slow")):
                unmarked.append(f"{path.relative_to(ROOT)}:{node.lineno} ({module})")
    assert unmarked == []


def test_ci_adds_the_peers_without_compiling_and_runs_their_tests():
    steps = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = next(i for i, s in enumerate(steps) if s.startswith("pip install torch==2.13.0 -e "))
    peers = steps.index('pip install "lstm_data[test-peers]"')  # the installed package named: no build
    assert readme < peers < steps.index('python -m pytest -m "peers and not slow"') < steps.index(
        "python -m pytest -m slow") < steps.index("mkdocs build --strict")
    markers = PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("peers:") for m in markers)


def test_the_description_names_every_format():
    description = PYPROJECT["project"]["description"]
    for name in ("CSV", "HDF5", "zarr", "Parquet/Arrow", "ROOT", "awkward"):
        assert name in description
