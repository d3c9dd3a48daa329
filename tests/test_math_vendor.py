"""The vendored Temml (static/widget/vendor/temml.js, math.js's renderer) is the npm package
pinned in .ci/js/package.json, byte for byte: its ES module build, dist/temml.mjs, unedited.

The file's SHA-256 is recorded here, so the check holds without Node.js; where the JavaScript
gates are installed (.ci/test runs `npm ci`), the file is also compared with the package's own.
To update: `cd .ci/js && npm install --save-exact --save-dev temml@VERSION`, copy
node_modules/temml/dist/temml.mjs to static/widget/vendor/temml.js and its LICENSE to
static/widget/vendor/temml.LICENSE, then change VERSION and SHA256 below (docs/security.md,
"Math in answers").
"""

from __future__ import annotations

import hashlib
import json
import re

from .helpers import REPO_ROOT

VERSION = "0.13.5"
SHA256 = "49753197751c1ff7fa2c76c3b8503b6cee03774c7c92ccd71c3c4b7fa5b31fe1"

VENDOR = REPO_ROOT / "static" / "widget" / "vendor"
GATES = REPO_ROOT / ".ci" / "js"


def test_the_pinned_version_is_exact_and_locked():
    package = json.loads((GATES / "package.json").read_text(encoding="utf-8"))
    assert package["devDependencies"]["temml"] == VERSION  # exact: no ^ or ~
    lock = json.loads((GATES / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/temml"]["version"] == VERSION


def test_the_vendored_file_is_the_pinned_packages_build():
    body = (VENDOR / "temml.js").read_bytes()
    assert hashlib.sha256(body).hexdigest() == SHA256
    declared = re.search(rb'^const version = "([^"]+)";$', body, re.MULTILINE)
    assert declared and declared.group(1).decode() == VERSION
    installed = GATES / "node_modules" / "temml"
    if installed.is_dir():
        assert json.loads((installed / "package.json").read_text(encoding="utf-8"))["version"] == VERSION
        assert (installed / "dist" / "temml.mjs").read_bytes() == body
        assert (installed / "LICENSE").read_bytes() == (VENDOR / "temml.LICENSE").read_bytes()


def test_the_licence_travels_with_it():
    licence = (VENDOR / "temml.LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence and "Ron Kok" in licence
