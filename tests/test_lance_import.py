"""LanceDB imported without its REST client's API classes (app/memory/lance_import.py): a real local
table is made, written and searched; the API classes are not loaded; and code that does ask for them
gets the real package, loaded then. In a fresh interpreter (the test process has LanceDB already)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import json, sys, tempfile
from app.memory.lance_import import lancedb
db = lancedb().connect(tempfile.mkdtemp())
table = db.create_table("messages", data=[{"id": "m_1", "text": "GI clamp 10 on the forest", "vector": [0.1, 0.2]}])
table.create_fts_index("text")
found = table.search("forest", query_type="fts").limit(1).to_list()
lean = "lance_namespace_urllib3_client.api" not in sys.modules
import lance_namespace_urllib3_client as client
print(json.dumps({"found": [r["id"] for r in found], "lean": lean, "api": client.TableApi.__name__,
                  "loaded_when_asked": "lance_namespace_urllib3_client.api" in sys.modules}))
"""


def test_lancedb_works_without_loading_the_rest_client_until_asked():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "found": ["m_1"], "lean": True, "api": "TableApi", "loaded_when_asked": True}
