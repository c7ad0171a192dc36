#!/usr/bin/env python3
"""Regenerates src/inspect/data/manylinux-policy.json from auditwheel's own policy file.

The manylinux policies (PEP 600) are data that auditwheel maintains (MIT licence); cudawheel
keeps the parts it uses (x86_64 and aarch64: symbol versions, allowed libraries, blacklisted
symbols) so that its platform tags agree with `auditwheel repair`.
Usage: python3 scripts/dev/refresh-manylinux-policy.py [AUDITWHEEL_VERSION]
"""

import glob
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = sys.argv[1] if len(sys.argv) > 1 else "6.8.2"
OUT = Path(__file__).resolve().parents[2] / "src/inspect/data/manylinux-policy.json"

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, f"auditwheel=={VERSION}"],
                   check=True)
    wheel = glob.glob(f"{tmp}/auditwheel-*.whl")[0]
    policies = json.loads(zipfile.ZipFile(wheel).read("auditwheel/policy/manylinux-policy.json"))

out = {"source": f"auditwheel {VERSION} auditwheel/policy/manylinux-policy.json (MIT licence)", "policies": []}
for p in policies:
    if p["name"] == "linux":
        continue
    out["policies"].append({
        "name": p["name"],
        "priority": p["priority"],
        "symbol_versions": {arch: v for arch, v in p["symbol_versions"].items() if arch in ("x86_64", "aarch64")},
        "lib_whitelist": p["lib_whitelist"],
        "blacklist": p["blacklist"],
    })
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
print(f"wrote {OUT} ({len(out['policies'])} policies)")
