"""Where inside the kernel cache a source file's kernels go: by the file's path in the project,
not on the disk.

numba's locator for a chosen cache directory (``UserProvidedCacheLocator``) files each source
file's kernels under a hash of the file's absolute directory, so two copies of the same sources
compile everything twice: a checkout and a wheel built from it, a clone moved or made again
elsewhere.  The directory ``kernel_cache.configure`` chooses is already named by the sources'
contents and the toolchain, and numba checks each file's content hash and each kernel's
bytecode before it loads anything, so inside it the absolute path adds nothing but misses.
This locator names the folder by the file's directory relative to the project root
(``engine_server/search/alphabeta``, ``training``, ...) and is otherwise numba's own.  Files
outside the project's packages (a test's scratch kernels) go to numba's locators as before.

``kernel_cache.configure`` puts it first in ``NUMBA_CACHE_LOCATOR_CLASSES`` (numba imports it
by that name when a kernel is first cached), followed by numba's own list.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from numba.core import config
from numba.core.caching import UserProvidedCacheLocator

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine_server", "training", "papers", "protocol", "benchmarks", "clients")


def project_dir(py_file: str) -> Path | None:
    """The directory of ``py_file`` relative to the project root, or None outside the
    project's packages."""
    try:
        rel = Path(py_file).resolve().parent.relative_to(ROOT)
    except (OSError, ValueError):
        return None
    return rel if rel.parts and rel.parts[0] in PACKAGES else None


class ProjectCacheLocator(UserProvidedCacheLocator):
    """numba's ``UserProvidedCacheLocator`` with the folder named by ``project_dir``."""

    def __init__(self, py_func: Any, py_file: str):
        super().__init__(py_func, py_file)
        rel = project_dir(py_file)
        assert rel is not None  # from_function admits project files only
        self._cache_path = os.path.join(config.CACHE_DIR, *rel.parts)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        if project_dir(py_file) is None:
            return None
        return super().from_function(py_func, py_file)


__all__ = ["ProjectCacheLocator", "project_dir"]
