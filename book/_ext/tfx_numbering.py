"""Sphinx extension: chapter numbers that run on across the book's parts.

Jupyter Book turns each part of ``_toc.yml`` into its own toctree, and Sphinx numbers every
numbered toctree from 1 (``TocTreeCollector.assign_section_numbers`` starts each with
``numstack = [0]``), so with ``numbered: true`` the second part would begin again at 1. This
extension lets Sphinx number each part as usual and then shifts each part's numbers by the
number of chapters in the numbered parts before it, so that chapter 13 is the thirteenth
chapter in reading order, in the sidebar, in the page title and in figure numbers ("Fig. 13.2":
Sphinx assigns figure numbers after section numbers, from these).

Loaded through ``sphinx.local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.environment.collectors.toctree import TocTreeCollector
from sphinx.util import url_re

_assign = TocTreeCollector.assign_section_numbers


def _shift(number, offset: int):
    return (number[0] + offset, *number[1:]) if number else number


def _numbered_parts(env) -> list[list[str]]:
    """The documents of each numbered toctree of the root document, in reading order."""
    root = env.config.root_doc
    if root not in env.numbered_toctrees:
        return []
    parts = []
    for toctree in env.get_doctree(root).findall(addnodes.toctree):
        if toctree.get("numbered", 0):
            parts.append([ref for _title, ref in toctree["entries"]
                          if not url_re.match(ref) and ref != "self" and ref in env.tocs])
    return parts


def assign_section_numbers(self, env) -> list[str]:
    """Sphinx's numbering, then each numbered part's chapter numbers shifted to run on."""
    old = dict(env.toc_secnumbers)
    _assign(self, env)
    offset = 0
    for docs in _numbered_parts(env):
        if offset:
            for doc in docs:
                nums = env.toc_secnumbers.get(doc, {})
                for anchor, number in nums.items():
                    nums[anchor] = _shift(number, offset)
                # the numbers Sphinx also set on the nodes of the sidebar's toctree and the title
                for node in env.tocs[doc].findall(nodes.reference):
                    if node.get("secnumber"):
                        node["secnumber"] = list(_shift(tuple(node["secnumber"]), offset))
                title = env.titles.get(doc)
                if title is not None and title.get("secnumber"):
                    title["secnumber"] = list(_shift(tuple(title["secnumber"]), offset))
        offset += len(docs)
    return sorted(doc for doc, nums in env.toc_secnumbers.items() if nums != old.get(doc))


def setup(app):
    TocTreeCollector.assign_section_numbers = assign_section_numbers
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
